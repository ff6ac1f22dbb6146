import { DEFINITIONS } from './schema/index.js';
import { SCHEMA_ID, SPEC_VERSION } from './version.js';

/** The shape of the generated spec document (`spec/<version>/schema.json`). */
export interface SpecDocument {
  readonly $schema: 'https://json-schema.org/draft/2020-12/schema';
  readonly $id: string;
  readonly title: string;
  readonly description: string;
  readonly $defs: Readonly<Record<string, unknown>>;
}

/**
 * Builds the JSON Schema document of this spec version from the TypeBox
 * definitions. JSON round-tripping drops TypeBox's symbol-keyed metadata
 * (kinds, transforms), leaving plain draft 2020-12 JSON Schema.
 */
export function buildSpecDocument(): SpecDocument {
  const $defs: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(DEFINITIONS)) {
    $defs[name] = JSON.parse(JSON.stringify(schema));
  }
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: SCHEMA_ID,
    title: `Sandstream ${SPEC_VERSION}`,
    description:
      'Wire and manifest types of the Sandstream specification. Generated from @sandstream/types; do not edit.',
    $defs,
  };
}

/** The document serialised exactly as the generator writes it to disk. */
export function serializeSpecDocument(document: SpecDocument = buildSpecDocument()): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
