/**
 * The version of the Sandstream specification this package implements.
 *
 * Packages that track the spec (types, conformance, the reference adapters)
 * share this major.minor; their own patch versions move independently.
 *
 * @example
 * ```ts
 * import { SPEC_VERSION } from '@sandstream/types';
 * console.log(`speaks Sandstream ${SPEC_VERSION}`);
 * ```
 */
export const SPEC_VERSION = '1.5' as const;

/**
 * The absolute, versioned `$id` of the generated JSON Schema document: the
 * exact wire forms of this revision, closed to unknown properties. What an
 * implementation of this revision writes validates against it (ADR-0012).
 */
export const SCHEMA_ID = `https://sandstream.dev/spec/${SPEC_VERSION}/schema.json` as const;

/**
 * The `$id` of this revision's reader document: the same definitions, open
 * to the properties and values later 1.x revisions may add. A consumer that
 * pins "1.x from this revision" validates what it receives against it
 * (ADR-0012).
 */
export const READER_SCHEMA_ID = `https://sandstream.dev/spec/${SPEC_VERSION}/reader.json` as const;

/**
 * The `$id` of this revision's testee document: the JSON Schemas of the
 * testee protocol's messages (section 18; ADR-0038), through which the kit
 * checks an adapter written in any language.
 */
export const TESTEE_SCHEMA_ID = `https://sandstream.dev/spec/${SPEC_VERSION}/testee.json` as const;

/** Builds the `$ref` URI of one definition inside the versioned schema document. */
export function schemaRef(name: string, document: string = SCHEMA_ID): string {
  return `${document}#/$defs/${name}`;
}
