import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { buildSpecDocument, buildTesteeDocument, serializeSpecDocument, type SpecDocument, type SpecDocumentKind } from '../src/spec-document.js';
import { DEFINITIONS } from '../src/schema/index.js';
import { TESTEE_DEFINITIONS } from '../src/schema/testee.js';
import { READER_SCHEMA_ID, SCHEMA_ID, SPEC_VERSION, TESTEE_SCHEMA_ID } from '../src/version.js';
import { SPEC_DIR } from './paths.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const REGENERATE = 'npm run generate -w @sandstream/types';
const DOCUMENTS: ReadonlyArray<[file: string, kind: SpecDocumentKind, id: string]> = [
  ['schema.json', 'exact', SCHEMA_ID],
  ['reader.json', 'reader', READER_SCHEMA_ID],
];

type Node = null | boolean | number | string | Node[] | { [key: string]: Node };

/** Every object node of a schema, with its JSON Pointer. */
function* walk(node: Node, pointer = ''): Generator<[string, { [key: string]: Node }]> {
  if (Array.isArray(node)) {
    for (const [index, item] of node.entries()) yield* walk(item, `${pointer}/${index}`);
  } else if (typeof node === 'object' && node !== null) {
    yield [pointer, node];
    for (const [key, value] of Object.entries(node)) yield* walk(value, `${pointer}/${key}`);
  }
}

describe.each(DOCUMENTS)(`spec/${SPEC_VERSION}/%s`, (file, kind, id) => {
  const document = buildSpecDocument(kind);

  it('is exactly what the TypeBox definitions generate', () => {
    const committed = readFileSync(join(SPEC_DIR, file), 'utf8');
    const generated = serializeSpecDocument(document);
    // Compare the parsed documents first for a readable diff, then the bytes
    // (key order, indentation and the trailing newline are part of the file).
    expect(
      JSON.parse(committed),
      `spec/${SPEC_VERSION}/${file} is out of date with packages/types/src/schema. Run \`${REGENERATE}\` and commit the result.`,
    ).toEqual(JSON.parse(generated));
    expect(
      committed === generated,
      `spec/${SPEC_VERSION}/${file} differs from the generator's output in formatting. Run \`${REGENERATE}\`.`,
    ).toBe(true);
  });

  it('carries its absolute, versioned $id and one $defs entry per definition', () => {
    expect(document.$id).toBe(id);
    expect(document.$id).toMatch(new RegExp(`^https://sandstream\\.dev/spec/${SPEC_VERSION.replace('.', '\\.')}/`));
    expect(document.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(Object.keys(document.$defs)).toEqual(Object.keys(DEFINITIONS));
  });

  it('gives every definition its name as title and a description', () => {
    for (const [name, schema] of Object.entries(document.$defs)) {
      const { title, description } = schema as { title?: unknown; description?: unknown };
      expect(title, `$defs.${name}.title`).toBe(name);
      expect(typeof description === 'string' && description.trim().length > 20, `$defs.${name}.description`).toBe(true);
    }
  });

  it('states each definition once: nested uses are $refs, never inline copies', () => {
    const names = new Set(Object.keys(DEFINITIONS));
    for (const [name, schema] of Object.entries(document.$defs)) {
      for (const [pointer, node] of walk(schema as Node)) {
        if (pointer === '') continue;
        expect(typeof node['title'] === 'string' && names.has(node['title']), `$defs/${name}${pointer} inlines ${String(node['title'])}`).toBe(false);
        if (typeof node['$ref'] === 'string') expect(names.has(node['$ref'].replace('#/$defs/', '')), node['$ref']).toBe(true);
      }
    }
    const refs = (name: string) => [...walk(document.$defs[name] as Node)].map(([, node]) => node['$ref']).filter(Boolean);
    expect(refs('OutputChunk')).toEqual(['#/$defs/StreamName']);
    expect(refs('ConformanceReport')).toEqual(['#/$defs/CapabilityManifest', '#/$defs/CaseResult']);
    expect(refs('CaseResult')).toEqual(['#/$defs/CaseStatus']);
  });

  it('compiles under ajv full strict mode', () => {
    const ajv = new Ajv2020({ strict: true, strictTypes: true, strictTuples: true, strictRequired: true, allowUnionTypes: false });
    addFormats(ajv);
    ajv.addSchema(document);
    for (const name of Object.keys(document.$defs)) {
      expect(() => ajv.getSchema(`${id}#/$defs/${name}`), name).not.toThrow();
      expect(ajv.getSchema(`${id}#/$defs/${name}`), name).toBeTypeOf('function');
    }
  });

  it('is plain JSON Schema: no TypeBox metadata leaks into the document', () => {
    const text = serializeSpecDocument(document);
    expect(text).not.toMatch(/TypeBox|\[Kind\]|"Transform"/);
    expect(text.endsWith('}\n')).toBe(true);
  });
});

describe('the exact and the reader documents', () => {
  it('differ only in what later minor revisions may add', () => {
    const exact = buildSpecDocument('exact');
    const reader = buildSpecDocument('reader');
    const closed = [...walk(exact as unknown as Node)].filter(([, node]) => node['additionalProperties'] === false);
    expect(closed.length).toBeGreaterThanOrEqual(6);
    expect([...walk(reader as unknown as Node)].filter(([, node]) => node['additionalProperties'] === false)).toEqual([]);
    // Forbidding truncation on a streamed result is this revision's rule for every later one too.
    expect(JSON.stringify(reader.$defs['ExecResult'])).toContain('"stdoutTruncated":{"const":false}');
  });
});

describe(`spec/${SPEC_VERSION}/testee.json`, () => {
  // The testee protocol's messages (section 18), generated like schema.json
  // from the TypeBox definitions of src/schema/testee.ts.
  const document: SpecDocument = buildTesteeDocument();
  const names = Object.keys(TESTEE_DEFINITIONS);

  it('is exactly what the TypeBox definitions generate', () => {
    const committed = readFileSync(join(SPEC_DIR, 'testee.json'), 'utf8');
    const generated = serializeSpecDocument(document);
    expect(
      JSON.parse(committed),
      `spec/${SPEC_VERSION}/testee.json is out of date with packages/types/src/schema/testee.ts. Run \`${REGENERATE}\` and commit the result.`,
    ).toEqual(JSON.parse(generated));
    expect(
      committed === generated,
      `spec/${SPEC_VERSION}/testee.json differs from the generator's output in formatting. Run \`${REGENERATE}\`.`,
    ).toBe(true);
  });

  it('carries its absolute, versioned $id and one $defs entry per definition', () => {
    expect(document.$id).toBe(TESTEE_SCHEMA_ID);
    expect(document.$id).toBe(`https://sandstream.dev/spec/${SPEC_VERSION}/testee.json`);
    expect(document.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(Object.keys(document.$defs)).toEqual(['TesteeRequest', 'TesteeLine', 'TesteeHello', 'WireError', 'WireValue']);
    expect(Object.keys(document.$defs)).toEqual(names);
  });

  it('gives every definition its name as title and a description', () => {
    for (const [name, schema] of Object.entries(document.$defs)) {
      const { title, description } = schema as { title?: unknown; description?: unknown };
      expect(title, `$defs.${name}.title`).toBe(name);
      expect(typeof description === 'string' && description.trim().length > 20, `$defs.${name}.description`).toBe(true);
    }
  });

  it('refers only to its own definitions, and inlines none of them', () => {
    for (const [name, schema] of Object.entries(document.$defs)) {
      for (const [pointer, node] of walk(schema as Node)) {
        if (pointer === '') continue;
        expect(typeof node['title'] === 'string' && names.includes(node['title']), `$defs/${name}${pointer} inlines ${String(node['title'])}`).toBe(false);
        if (typeof node['$ref'] === 'string') expect(names.map((n) => `#/$defs/${n}`), `$defs/${name}${pointer}`).toContain(node['$ref']);
      }
    }
    // Nothing of schema.json is referred to: the kit passes manifests, results and chunks on for the cases to judge.
    expect(serializeSpecDocument(document)).not.toContain('schema.json');
  });

  it('leaves every message open to properties section 18 does not name, and closes only the $ forms of values', () => {
    const closed = [...walk(document as unknown as Node)].filter(([, node]) => node['additionalProperties'] === false).map(([pointer]) => pointer);
    expect(closed.length).toBe(8);
    for (const pointer of closed) expect(pointer).toMatch(/^\/\$defs\/WireValue\/anyOf\/\d+$/);
  });

  it('compiles under ajv full strict mode', () => {
    const ajv = new Ajv2020({ strict: true, strictTypes: true, strictTuples: true, strictRequired: true, allowUnionTypes: false });
    addFormats(ajv);
    ajv.addSchema(document);
    for (const name of names) {
      expect(() => ajv.getSchema(`${TESTEE_SCHEMA_ID}#/$defs/${name}`), name).not.toThrow();
      expect(ajv.getSchema(`${TESTEE_SCHEMA_ID}#/$defs/${name}`), name).toBeTypeOf('function');
    }
  });

  it('is plain JSON Schema: no TypeBox metadata leaks into the document', () => {
    const text = serializeSpecDocument(document);
    expect(text).not.toMatch(/TypeBox|\[Kind\]|"Transform"|"Unsafe"/);
    expect(text.endsWith('}\n')).toBe(true);
  });
});
