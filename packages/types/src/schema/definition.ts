import type { TSchema } from '@sinclair/typebox';

/**
 * Names a schema as a definition of the spec document (`$defs/<name>`) and
 * gives it the description every definition carries. Definitions compose
 * by value in TypeScript (so TypeBox can check and decode them); the
 * document generator replaces each nested use of a named definition with a
 * `$ref` to its `$defs` entry, so the JSON Schema holds each one once.
 */
export function definition<T extends TSchema>(name: string, description: string, schema: T): T {
  return Object.assign(schema, { title: name, description });
}
