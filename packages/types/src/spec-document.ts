import { DEFINITIONS } from './schema/index.js';
import { TESTEE_DEFINITIONS } from './schema/testee.js';
import { READER_SCHEMA_ID, SCHEMA_ID, SPEC_VERSION, TESTEE_SCHEMA_ID } from './version.js';

/** The shape of a generated spec document (`spec/<version>/schema.json`, `reader.json` or `testee.json`). */
export interface SpecDocument {
  readonly $schema: 'https://json-schema.org/draft/2020-12/schema';
  readonly $id: string;
  readonly title: string;
  readonly description: string;
  readonly $defs: Readonly<Record<string, unknown>>;
}

/**
 * Which document to build (ADR-0012):
 * - `exact`: this revision's wire forms, closed to unknown properties. What
 *   an implementation writes validates against it.
 * - `reader`: the same definitions open to what later 1.x revisions may add
 *   (unknown properties, further capabilities and error codes). What a
 *   consumer pinned to "1.x from this revision" receives validates against it.
 */
export type SpecDocumentKind = 'exact' | 'reader';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Definitions whose set of values a later minor revision may extend, with the shape any value has. */
const OPEN_ENUMS: Readonly<Record<string, string>> = {
  Capability: '^[a-z][a-z0-9-]*$',
  ErrorCode: '^[A-Z][A-Z0-9_]*$',
};

function isObject(value: Json): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Replaces every nested use of a named definition with a `$ref` to its
 * `$defs` entry, so the document states each definition once. A nested copy
 * that differs from the definition is a bug in the sources and throws.
 */
function referenceDefinitions(node: Json, definitions: Readonly<Record<string, Json>>, root: boolean): Json {
  if (Array.isArray(node)) return node.map((item) => referenceDefinitions(item, definitions, false));
  if (!isObject(node)) return node;
  const title = node['title'];
  if (!root && typeof title === 'string' && title in definitions) {
    if (JSON.stringify(node) !== JSON.stringify(definitions[title])) {
      throw new Error(`a nested copy of ${title} differs from its definition`);
    }
    return { $ref: `#/$defs/${title}` };
  }
  const out: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) out[key] = referenceDefinitions(value, definitions, false);
  return out;
}

/** Opens a definition to what later minor revisions may add. */
function openForLaterMinors(name: string, node: Json): Json {
  if (Array.isArray(node)) return node.map((item) => openForLaterMinors(name, item));
  if (!isObject(node)) return node;
  const out: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) out[key] = openForLaterMinors(name, value);
  if (out['additionalProperties'] === false) {
    // A later minor only adds properties. The manifest's are booleans, like
    // its vendor extensions; any other object's are left unconstrained.
    const patterns = out['patternProperties'];
    if (patterns !== undefined && isObject(patterns)) {
      const schemas = Object.values(patterns);
      out['additionalProperties'] = schemas.length === 1 ? schemas[0]! : true;
    } else {
      delete out['additionalProperties'];
    }
  }
  return out;
}

function openEnum(name: string, node: Json): Json {
  const pattern = OPEN_ENUMS[name];
  if (pattern === undefined || !isObject(node) || !Array.isArray(node['anyOf'])) return node;
  return {
    ...node,
    anyOf: [...node['anyOf'], { type: 'string', pattern }],
  };
}

/**
 * Builds a JSON Schema document of this spec version from the TypeBox
 * definitions. JSON round-tripping drops TypeBox's symbol-keyed metadata
 * (kinds, transforms), leaving plain draft 2020-12 JSON Schema.
 */
export function buildSpecDocument(kind: SpecDocumentKind = 'exact'): SpecDocument {
  const plain: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(DEFINITIONS)) plain[name] = JSON.parse(JSON.stringify(schema)) as Json;
  const $defs: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(plain)) {
    const referenced = referenceDefinitions(schema, plain, true);
    $defs[name] = kind === 'exact' ? referenced : openEnum(name, openForLaterMinors(name, referenced));
  }
  return kind === 'exact'
    ? {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        $id: SCHEMA_ID,
        title: `Sandstream ${SPEC_VERSION}`,
        description:
          'Wire and manifest types of the Sandstream specification, exactly as this revision defines them. Generated from @sandstream/types; do not edit.',
        $defs,
      }
    : {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        $id: READER_SCHEMA_ID,
        title: `Sandstream ${SPEC_VERSION} reader`,
        description: `Wire and manifest types of the Sandstream specification as a consumer of ${SPEC_VERSION} reads them: open to the properties, capabilities and error codes later 1.x revisions add (ADR-0012). Generated from @sandstream/types; do not edit.`,
        $defs,
      };
}

/**
 * Builds the JSON Schema document of the testee protocol of this spec
 * version (section 18, `spec/<version>/testee.json`) from its TypeBox
 * definitions. Its messages are open to properties the section does not name
 * (SS-TESTEE-1), so it has one form, for writers and readers alike.
 */
export function buildTesteeDocument(): SpecDocument {
  const plain: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(TESTEE_DEFINITIONS)) plain[name] = JSON.parse(JSON.stringify(schema)) as Json;
  const $defs: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(plain)) $defs[name] = referenceDefinitions(schema, plain, true);
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: TESTEE_SCHEMA_ID,
    title: `Sandstream ${SPEC_VERSION} testee protocol`,
    description:
      "The messages of the testee protocol (section 18): the kit's requests on a testee's standard input, the testee's lines on its standard output, the hello's answer, errors and the value form. One JSON object a line; objects may carry properties the section does not name, which a reader ignores. Generated from @sandstream/types; do not edit.",
    $defs,
  };
}

/** The document serialised exactly as the generator writes it to disk. */
export function serializeSpecDocument(document: SpecDocument = buildSpecDocument()): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
