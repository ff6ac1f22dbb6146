// Every tool's inputSchema, as the SDK's Client gets it from tools/list, walked against the JSON
// Schema subset that the strict tool modes of OpenAI, Anthropic and Gemini accept (README,
// "Schemas for strict tool modes"). The check is written apart from the server's transform, so a
// keyword the transform lets through fails here.
import { describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { unless } from '@sandstream/test-support/skips';
import { connect, failureOf, outcome } from './harness.js';
import { isolation } from './isolation.js';

const KEYWORDS = new Set(['type', 'description', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'anyOf']);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object', 'null']);
const MAX_DEPTH = 5;

/** What in `schema` falls outside the subset, each problem with its path. */
export function outsideSubset(schema: unknown, path = '$', depth = 0, root = true): string[] {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return [`${path}: not a schema object`];
  const node = schema as Record<string, unknown>;
  const problems: string[] = [];
  if (depth > MAX_DEPTH) problems.push(`${path}: nested deeper than ${MAX_DEPTH}`);
  for (const key of Object.keys(node)) if (!KEYWORDS.has(key)) problems.push(`${path}: keyword ${key} is outside the subset`);
  if (root && (node['type'] !== 'object' || node['anyOf'] !== undefined)) problems.push(`${path}: the root must be type "object", not nullable, not anyOf`);
  const type = node['type'];
  const types = Array.isArray(type) ? type : type === undefined ? [] : [type];
  if (Array.isArray(type) && !(type.length === 2 && type[1] === 'null' && type[0] !== 'null')) problems.push(`${path}: a type array must be [T, "null"]`);
  for (const t of types) if (typeof t !== 'string' || !TYPES.has(t)) problems.push(`${path}: type ${JSON.stringify(t)}`);
  if (type === undefined && node['anyOf'] === undefined) problems.push(`${path}: neither type nor anyOf`);
  if (node['description'] !== undefined && typeof node['description'] !== 'string') problems.push(`${path}: description is not a string`);
  if (node['enum'] !== undefined) {
    const values = node['enum'];
    if (!Array.isArray(values) || values.length === 0 || !values.every((value) => typeof value === 'string')) problems.push(`${path}: enum must be a non-empty array of strings`);
    if (!types.includes('string')) problems.push(`${path}: enum without type string`);
  }
  if (types.includes('object')) {
    const properties = node['properties'];
    if (typeof properties !== 'object' || properties === null) problems.push(`${path}: an object without properties`);
    else {
      const names = Object.keys(properties);
      const required = node['required'];
      if (!Array.isArray(required) || required.length !== names.length || !names.every((name) => required.includes(name))) {
        problems.push(`${path}: required must list every property (${names.join(', ')}), got ${JSON.stringify(required)}`);
      }
      for (const [name, child] of Object.entries(properties)) problems.push(...outsideSubset(child, `${path}.properties.${name}`, depth + 1, false));
    }
    if (node['additionalProperties'] !== false) problems.push(`${path}: additionalProperties must be false`);
  } else if (node['properties'] !== undefined || node['required'] !== undefined || node['additionalProperties'] !== undefined) {
    problems.push(`${path}: object keywords on a non-object`);
  }
  if (types.includes('array')) {
    if (typeof node['items'] !== 'object' || node['items'] === null || Array.isArray(node['items'])) problems.push(`${path}: an array needs one items schema`);
    else problems.push(...outsideSubset(node['items'], `${path}.items`, depth + 1, false));
  } else if (node['items'] !== undefined) problems.push(`${path}: items on a non-array`);
  if (node['anyOf'] !== undefined) {
    if (!Array.isArray(node['anyOf']) || node['anyOf'].length < 2) problems.push(`${path}: anyOf must have two branches or more`);
    else node['anyOf'].forEach((branch, i) => problems.push(...outsideSubset(branch, `${path}.anyOf[${i}]`, depth + 1, false)));
    if (type !== undefined) problems.push(`${path}: type beside anyOf`);
  }
  return problems;
}

async function toolsOf(client: Client): Promise<Awaited<ReturnType<Client['listTools']>>['tools']> {
  return (await client.listTools()).tools;
}

describe('the strict JSON Schema subset', () => {
  it('the checker rejects what strict modes refuse', () => {
    expect(outsideSubset({ type: 'object', properties: { a: { type: 'string' } }, required: [], additionalProperties: false })).toEqual([expect.stringContaining('required must list every property')]);
    expect(outsideSubset({ type: 'object', properties: { e: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: { type: 'string' } } }, required: ['e'], additionalProperties: false })).toEqual(
      expect.arrayContaining([expect.stringContaining('propertyNames'), expect.stringContaining('additionalProperties must be false')]),
    );
    expect(outsideSubset({ type: 'object', properties: { n: { type: 'integer', exclusiveMinimum: 0, maximum: 9007199254740991 } }, required: ['n'], additionalProperties: false })).toEqual([
      expect.stringContaining('exclusiveMinimum'),
      expect.stringContaining('maximum'),
    ]);
  });

  for (const [mode, args, skip] of [
    ['plain local (with pty)', ['--adapter', 'local'], undefined],
    ['local --isolation namespaces', ['--adapter', 'local', '--isolation', 'namespaces'], isolation],
  ] as const) {
    unless(it, skip)(`${mode}: every tool's inputSchema from listTools() is inside the subset, and its name a valid function name`, async () => {
      const session = await connect(args);
      try {
        const tools = await toolsOf(session.client);
        expect(tools.length).toBeGreaterThanOrEqual(7);
        expect(tools.map((tool) => tool.name)).toContain('sandbox_shell');
        for (const tool of tools) {
          expect(tool.name, tool.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
          expect(outsideSubset(tool.inputSchema), tool.name).toEqual([]);
        }
      } finally {
        await session.client.close();
      }
    });
  }

  it('the server still validates what the schema no longer states: bounds give typed errors', async () => {
    const session = await connect();
    try {
      const call = async (name: string, args: Record<string, unknown>) => failureOf((await session.client.callTool({ name, arguments: args })) as never);
      expect(await call('sandbox_exec', { argv: [] })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.argv' });
      expect(await call('sandbox_exec', { command: '' })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.command' });
      expect(await call('sandbox_exec', { command: 'true', timeout: 0 })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.timeout' });
      expect(await call('sandbox_exec', { command: 'true', pty: { cols: 0, rows: 10 } })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.pty.cols' });
      expect(await call('sandbox_shell', { command: 'true', timeout: 0 })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.timeout' });
      expect(await call('sandbox_shell', { command: 'true', reset: 'yes' })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.reset' });
      expect(await call('sandbox_read', { id: 'job-1', waitMs: 50_001 })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.waitMs' });
      expect(await call('sandbox_read', { id: 'job-1', waitMs: -1 })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.waitMs' });
      expect(await call('sandbox_read', { id: '' })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.id' });
      expect(await call('sandbox_start', { command: 'true', env: ['=x'] })).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.env.0' });
      // null is absent: a strict-mode call of start and read.
      const started = await session.client.callTool({ name: 'sandbox_start', arguments: { argv: null, command: 'echo hi', cwd: null, env: ['A=1'], pty: null } });
      expect(started.isError).not.toBe(true);
      expect(outcome((await session.client.callTool({ name: 'sandbox_exec', arguments: { command: 'echo "$A $B"', env: ['A=1', 'B=x=y'] } })) as never).stdout).toBe('1 x=y\n');
    } finally {
      await session.client.close();
    }
  });
});
