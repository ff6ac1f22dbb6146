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
export const SPEC_VERSION = '1.0' as const;

/** The absolute, versioned `$id` of the generated JSON Schema document. */
export const SCHEMA_ID = `https://sandstream.dev/spec/${SPEC_VERSION}/schema.json` as const;

/** Builds the `$ref` URI of one definition inside the versioned schema document. */
export function schemaRef(name: string): string {
  return `${SCHEMA_ID}#/$defs/${name}`;
}
