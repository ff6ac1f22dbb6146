// Regenerates src/requirements.ts from the spec's requirements.json.
import { readFileSync, writeFileSync } from 'node:fs';

const spec = JSON.parse(readFileSync(new URL('../../../spec/1.0/requirements.json', import.meta.url), 'utf8'));
const body = `// Frozen copy of spec/${spec.specVersion}/requirements.json; test/requirements.test.ts fails when they differ.
// Refresh with: npm run sync-requirements -w @sandstream/conformance

/** One requirement of the spec, as requirements.json states it. */
export interface Requirement {
  readonly id: string;
  readonly level: 'MUST' | 'SHOULD';
  readonly section: string;
  readonly statement: string;
  readonly introduced: string;
  readonly capability?: string;
}

/** The spec revision these requirements belong to. */
export const REQUIREMENTS_SPEC_VERSION = ${JSON.stringify(spec.specVersion)};

/** Every requirement of the spec revision this kit checks. */
export const REQUIREMENTS: readonly Requirement[] = ${JSON.stringify(spec.requirements, null, 2)};
`;
writeFileSync(new URL('../src/requirements.ts', import.meta.url), body);
