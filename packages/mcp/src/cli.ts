#!/usr/bin/env node
// sandstream-mcp: the exec server over stdio. The session is the process:
// when the client closes stdin, disconnects, or signals the server, the
// session ends, the sandbox is closed, and then the process exits.
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { AdapterLoadError, openSandbox } from './adapter.js';
import { applyEnvNames, UsageError, validateEnvNames } from './cli-env.js';
import { createExecServer } from './server.js';
import { VERSION } from './version.js';

const USAGE = `Usage: sandstream-mcp --adapter <local|e2b|vercel|docker|./module.js> [options]

A stdio MCP server whose tools (exec, start, read, write, kill, list) run commands in the sandbox.

  --adapter <name|path>       local, e2b, vercel, docker (their packages must be installed),
                              or a module whose createSandbox or default export returns a Sandbox
  --isolation <none|namespaces>  local only: namespaces runs commands in an isolated environment
  --env <NAME>                pass the server's variable NAME to the sandbox's commands (repeatable).
                              Without it, local commands get only PATH, HOME, TERM, LANG, LANGUAGE
                              and LC_* of the server's environment, e2b, vercel and docker ones none.
                              Not with a module path (give it what it needs with --options)
  --options <json>            an object passed to the adapter's factory (local: an "env" in it
                              replaces the allowlist, and the --env names are added over it)
  --max-output-bytes <n>      bytes kept per stream when a call gives no maxOutputBytes (default 1048576)
  --version                   print the version
  -h, --help                  print this help
`;

function parseOptions(): { adapter: string; factoryOptions: Record<string, unknown>; maxOutputBytes: number | undefined } {
  const { values } = parseArgs({
    options: {
      adapter: { type: 'string' },
      isolation: { type: 'string' },
      options: { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      'max-output-bytes': { type: 'string' },
      version: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    process.exit(0);
  }
  if (values.adapter === undefined) throw new UsageError('--adapter is required');
  let factoryOptions: Record<string, unknown> = {};
  if (values.options !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(values.options);
    } catch {
      throw new UsageError('--options is not valid JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError('--options must be a JSON object');
    factoryOptions = parsed as Record<string, unknown>;
  }
  if (values.isolation !== undefined) {
    if (values.adapter !== 'local') throw new UsageError('--isolation applies to --adapter local only');
    if (values.isolation !== 'none' && values.isolation !== 'namespaces') throw new UsageError('--isolation is none or namespaces');
    factoryOptions = { ...factoryOptions, isolation: values.isolation };
  }
  const warn = (message: string): void => void process.stderr.write(`sandstream-mcp: ${message}\n`);
  factoryOptions = applyEnvNames(values.adapter, factoryOptions, validateEnvNames(values.env), process.env, warn);
  let maxOutputBytes: number | undefined;
  if (values['max-output-bytes'] !== undefined) {
    maxOutputBytes = Number(values['max-output-bytes']);
    if (!Number.isSafeInteger(maxOutputBytes) || maxOutputBytes < 0) throw new UsageError('--max-output-bytes is a non-negative integer');
  }
  return { adapter: values.adapter, factoryOptions, maxOutputBytes };
}

async function main(): Promise<void> {
  const { adapter, factoryOptions, maxOutputBytes } = parseOptions();
  const sandbox = await openSandbox(adapter, factoryOptions);
  const server = createExecServer(sandbox, maxOutputBytes === undefined ? {} : { maxOutputBytes });
  const end = (): void => void server.close().catch((error: unknown) => process.stderr.write(`sandstream-mcp: closing the sandbox failed: ${String(error)}\n`));
  // The SDK's stdio transport does not watch for the end of its input: the
  // client closing stdin (or exiting) is the end of the session.
  process.stdin.once('end', end);
  process.stdin.once('close', end);
  // EPIPE on stdout: the client is gone; without a listener it would crash the server.
  process.stdout.on('error', end);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(signal, end);
  await server.connect(new StdioServerTransport());
  await server.closed;
  // Exit explicitly: the sandbox is closed and nothing of the session is left to wait for.
  process.exit(0);
}

main().catch((error: unknown) => {
  // Exit 2 for what the command line got wrong, 1 for anything else.
  const parseFailure = String((error as { code?: unknown }).code ?? '').startsWith('ERR_PARSE_ARGS');
  const known = error instanceof UsageError || error instanceof AdapterLoadError || parseFailure;
  process.stderr.write(`sandstream-mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  if (error instanceof UsageError) process.stderr.write(`\n${USAGE}`);
  process.exit(known ? 2 : 1);
});
