// Brings the kit's copy of the requirements in line with the spec it checks.
//
// spec/<version>/spec.md is the one source of every requirement's statement
// (the text ending at its **[SS-...]** tag). This script
//   1. copies each statement from spec.md into spec/<version>/requirements.json,
//      which adds what spec.md cannot say (level, section, capability, introduced);
//   2. regenerates src/requirements.ts from requirements.json.
// `--check` changes nothing and exits 1 when either file is out of date.
// The version is this package's "sandstream.specVersion".
//
//   npm run sync-requirements -w @sandstream/conformance [-- --check]
import { readFileSync, writeFileSync } from 'node:fs';
import { extractStatements } from '../../types/scripts/spec-requirements.mjs';

const check = process.argv.includes('--check');
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const version = pkg.sandstream.specVersion;
const specDir = new URL(`../../../spec/${version}/`, import.meta.url);
const jsonUrl = new URL('requirements.json', specDir);
const tsUrl = new URL('../src/requirements.ts', import.meta.url);

const statements = new Map(extractStatements(readFileSync(new URL('spec.md', specDir), 'utf8')).map((t) => [t.id, t.statement]));
const document = JSON.parse(readFileSync(jsonUrl, 'utf8'));
const problems = [];
for (const requirement of document.requirements) {
  const statement = statements.get(requirement.id);
  if (statement === undefined) problems.push(`${requirement.id} is in requirements.json but has no tag in spec.md`);
  else requirement.statement = statement;
}
const listed = new Set(document.requirements.map((r) => r.id));
for (const id of statements.keys()) {
  if (!listed.has(id)) problems.push(`${id} is tagged in spec.md but has no entry in requirements.json (add its level, section and introduced)`);
}
if (problems.length > 0) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(1);
}

function renderRequirementsTs(doc) {
  return `// Generated from spec/${doc.specVersion}/requirements.json by scripts/sync-requirements.mjs; do not edit.
// spec/${doc.specVersion}/spec.md is the source of each statement; test/requirements.test.ts holds all three equal.
// Refresh with: npm run sync-requirements -w @sandstream/conformance

/** One requirement of the spec, as requirements.json states it. */
export interface Requirement {
  readonly id: string;
  readonly level: 'MUST' | 'SHOULD';
  readonly section: string;
  /** The requirement's sentence in spec.md, up to its tag. */
  readonly statement: string;
  readonly introduced: string;
  /** The requirement applies only to an adapter that advertises this capability. */
  readonly capability?: string;
  /** The requirement applies only to an adapter that does not advertise this capability. */
  readonly without?: string;
  /**
   * \`harness\`: the requirement binds the kit and the testees it talks to (spec section 18),
   * not a Sandbox; the kit's own tests prove it, and no case does (spec sections 1 and 16).
   */
  readonly provedBy?: 'harness';
}

/** The spec revision these requirements belong to. */
export const REQUIREMENTS_SPEC_VERSION = ${JSON.stringify(doc.specVersion)};

/** Every requirement of the spec revision this kit checks. */
export const REQUIREMENTS: readonly Requirement[] = ${JSON.stringify(doc.requirements, null, 2)};
`;
}

const json = `${JSON.stringify(document, null, 2)}\n`;
const ts = renderRequirementsTs(document);
const stale = [];
if (readFileSync(jsonUrl, 'utf8') !== json) stale.push(`spec/${version}/requirements.json`);
if (readFileSync(tsUrl, 'utf8') !== ts) stale.push('packages/conformance/src/requirements.ts');
if (check) {
  if (stale.length > 0) {
    process.stderr.write(`out of date with spec/${version}/spec.md: ${stale.join(', ')}\nRun: npm run sync-requirements -w @sandstream/conformance\n`);
    process.exit(1);
  }
} else {
  writeFileSync(jsonUrl, json);
  writeFileSync(tsUrl, ts);
  if (stale.length > 0) process.stdout.write(`updated ${stale.join(', ')}\n`);
}
