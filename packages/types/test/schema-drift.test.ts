import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSpecDocument, serializeSpecDocument } from '../src/spec-document.js';
import { DEFINITIONS } from '../src/schema/index.js';
import { SCHEMA_ID, SPEC_VERSION } from '../src/version.js';
import { SPEC_DIR } from './paths.js';

const REGENERATE = 'npm run generate -w @sandstream/types';

describe('spec/<version>/schema.json', () => {
  it('is exactly what the TypeBox definitions generate', () => {
    const committed = readFileSync(join(SPEC_DIR, 'schema.json'), 'utf8');
    const generated = serializeSpecDocument();
    // Compare the parsed documents first for a readable diff, then the bytes
    // (key order, indentation and the trailing newline are part of the file).
    expect(
      JSON.parse(committed),
      `spec/${SPEC_VERSION}/schema.json is out of date with packages/types/src/schema. Run \`${REGENERATE}\` and commit the result.`,
    ).toEqual(JSON.parse(generated));
    expect(
      committed === generated,
      `spec/${SPEC_VERSION}/schema.json differs from the generator's output in formatting. Run \`${REGENERATE}\`.`,
    ).toBe(true);
  });

  it('carries the absolute, versioned $id and one $defs entry per definition', () => {
    const document = buildSpecDocument();
    expect(document.$id).toBe(`https://sandstream.dev/spec/${SPEC_VERSION}/schema.json`);
    expect(document.$id).toBe(SCHEMA_ID);
    expect(document.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(Object.keys(document.$defs)).toEqual(Object.keys(DEFINITIONS));
    for (const [name, schema] of Object.entries(document.$defs)) {
      expect((schema as { title?: string }).title, `$defs.${name}.title`).toBe(name);
    }
  });

  it('is plain JSON Schema: no TypeBox metadata leaks into the document', () => {
    const text = serializeSpecDocument();
    expect(text).not.toMatch(/TypeBox|\[Kind\]|"Transform"/);
    expect(text.endsWith('}\n')).toBe(true);
  });
});
