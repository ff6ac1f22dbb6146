// The input schemas `tools/list` advertises, inside the JSON Schema subset
// that the strict tool modes of the major model providers accept (OpenAI's
// strict function calling, Anthropic's strict tool use, Gemini's function
// declarations): every property required, an optional one as a nullable
// type, `additionalProperties: false` on every object, and no validation
// keyword a provider refuses (bounds, lengths, patterns, formats,
// `propertyNames`). The bounds are stated in the descriptions for the model,
// and the server still enforces them with the zod schemas, with typed errors.
import { z } from 'zod';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

type Json = Record<string, unknown>;

/** Keywords outside the subset: dropped from the advertised schema, enforced by the server. */
const DROPPED = new Set([
  '$schema',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minItems',
  'maxItems',
  'uniqueItems',
  'propertyNames',
  'default',
]);

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `anyOf` branches, nested `anyOf`s without other keywords flattened into them. */
function branches(list: unknown[]): Json[] {
  return list.flatMap((branch) => {
    const node = branch as Json;
    return Object.keys(node).length === 1 && Array.isArray(node['anyOf']) ? branches(node['anyOf'] as unknown[]) : [node];
  });
}

const isNull = (node: Json): boolean => node['type'] === 'null' && Object.keys(node).length === 1;

/** `node` that also accepts null: `type: [T, 'null']` where it has one type, else a null branch. */
function nullable(node: Json): Json {
  if (typeof node['type'] === 'string' && node['anyOf'] === undefined) return { ...node, type: [node['type'], 'null'] };
  if (Array.isArray(node['type'])) return node['type'].includes('null') ? node : { ...node, type: [...(node['type'] as unknown[]), 'null'] };
  const { description, anyOf, ...rest } = node;
  const options = Array.isArray(anyOf) ? branches(anyOf) : [rest];
  if (options.some(isNull)) return node;
  return { ...(description === undefined ? {} : { description }), anyOf: [...options, { type: 'null' }] };
}

function strict(node: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (DROPPED.has(key)) continue;
    if (key === 'properties' && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, strict(schema as Json)]));
    else if (key === 'items' && isObject(value)) out[key] = strict(value);
    else if (key === 'anyOf' && Array.isArray(value)) out[key] = branches(value).map(strict);
    else out[key] = value;
  }
  // A union with null as one branch and one other typed branch: the compact form.
  if (Array.isArray(out['anyOf'])) {
    const options = out['anyOf'] as Json[];
    const others = options.filter((option) => !isNull(option));
    if (options.length === 2 && others.length === 1 && typeof others[0]!['type'] === 'string' && others[0]!['anyOf'] === undefined) {
      const { anyOf: _anyOf, ...rest } = out;
      return { ...others[0], ...rest, type: [others[0]!['type'], 'null'] };
    }
  }
  if (isObject(out['properties'])) {
    const required = new Set(Array.isArray(out['required']) ? (out['required'] as string[]) : []);
    const properties = out['properties'] as Record<string, Json>;
    out['properties'] = Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, required.has(name) ? schema : nullable(schema)]));
    out['required'] = Object.keys(properties);
    out['additionalProperties'] = false;
  }
  return out;
}

/**
 * The JSON Schema of a zod object schema, in the strict subset: each
 * property the zod schema makes optional is required and nullable instead
 * (the server takes null as absent, {@link withoutNulls}).
 */
export function strictJsonSchema(schema: z.ZodType): Tool['inputSchema'] {
  const generated = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as Json;
  return { ...strict(generated), type: 'object' } as Tool['inputSchema'];
}

/**
 * The arguments with the properties whose value is null left out: what a
 * model in a strict mode sends for an argument it does not give.
 */
export function withoutNulls(args: unknown): unknown {
  if (!isObject(args)) return args;
  return Object.fromEntries(Object.entries(args).filter(([, value]) => value !== null));
}
