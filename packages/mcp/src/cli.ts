#!/usr/bin/env node
// sandstream-mcp: the exec server over stdio. The session is the process:
// when the client closes stdin, disconnects, or signals the server, the
// session ends, the sandbox is closed, and then the process exits.
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { AdapterLoadError, openSandbox } from './adapter.js';
import { applyEnvNames, UsageError, validateEnvNames } from './cli-env.js';
import { MIN_OUTPUT_BUDGET } from './output.js';
import { DEFAULT_EXEC_TIMEOUT_MS } from './schema.js';
import { createExecServer, type ExecServerOptions } from './server.js';
import { VERSION } from './version.js';

const USAGE = `Usage: sandstream-mcp --adapter <local|e2b|vercel|docker|./module.js> [options]

A stdio MCP server whose tools run commands in the sandbox. With the default prefix they are:
  sandbox_exec    run a command to completion (exit status and output)
  sandbox_shell   the same, in a session shell: cd and exported variables carry over between calls
  sandbox_start   start a command in the background (servers, watchers, long jobs)
  sandbox_read    read a background command's output (waitMs, until)
  sandbox_write   write text or named keys to a background command's input
  sandbox_kill    stop a background command and everything it started
  sandbox_list    list the background commands
  sandbox_resize  resize a background command's terminal (where the sandbox has terminals)

  --adapter <name|path>       local, e2b, vercel, docker (their packages must be installed),
                              or a module whose createSandbox or default export returns a Sandbox
  --isolation <none|namespaces>  local only: namespaces runs commands in an isolated environment
  --env <NAME>                pass the server's variable NAME to the sandbox's commands (repeatable).
                              Without it, local commands get only PATH, HOME, TERM, LANG, LANGUAGE
                              and LC_* of the server's environment, e2b, vercel and docker ones none.
                              Not with a module path (give it what it needs with --options)
  --options <json>            an object passed to the adapter's factory (local: an "env" in it
                              replaces the allowlist, and the --env names are added over it)
  --tool-prefix <prefix>      prefix of the tools' names (default sandbox_; "" for exec, start, ...)
                              [env SANDSTREAM_MCP_TOOL_PREFIX]
  --output-budget <chars>     characters of one result's text; longer output is cut in the middle,
                              head and tail kept (default 30000, at least 2000) [env SANDSTREAM_MCP_OUTPUT_BUDGET]
  --timeout <ms>              exec's time limit when a call gives none (default 50000, under the
                              60 s MCP clients wait by default) [env SANDSTREAM_MCP_TIMEOUT]
  --max-timeout <ms>          the highest timeout a call may give (default 600000) [env SANDSTREAM_MCP_MAX_TIMEOUT]
  --max-unread-bytes <n>      unread bytes kept per stream of a background command (default 1048576)
                              [env SANDSTREAM_MCP_MAX_UNREAD_BYTES]
  --version                   print the version
  -h, --help                  print this help
`;

/** The server's settings: a flag, else its environment variable, else the default. */
const SETTINGS = {
  'tool-prefix': 'SANDSTREAM_MCP_TOOL_PREFIX',
  'output-budget': 'SANDSTREAM_MCP_OUTPUT_BUDGET',
  timeout: 'SANDSTREAM_MCP_TIMEOUT',
  'max-timeout': 'SANDSTREAM_MCP_MAX_TIMEOUT',
  'max-unread-bytes': 'SANDSTREAM_MCP_MAX_UNREAD_BYTES',
} as const;

function integer(flag: keyof typeof SETTINGS, given: string | undefined, least: number): number | undefined {
  const text = given ?? process.env[SETTINGS[flag]];
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < least) throw new UsageError(`--${flag} (or ${SETTINGS[flag]}) is an integer of at least ${least}, got ${JSON.stringify(text)}`);
  return value;
}

function serverOptions(values: Partial<Record<keyof typeof SETTINGS, string>>, adapter: string, factoryOptions: Record<string, unknown>): ExecServerOptions {
  const prefix = values['tool-prefix'] ?? process.env[SETTINGS['tool-prefix']];
  if (prefix !== undefined && !/^[A-Za-z0-9_-]{0,58}$/.test(prefix)) throw new UsageError('--tool-prefix (or SANDSTREAM_MCP_TOOL_PREFIX) is at most 58 letters, digits, "_" and "-"');
  const defaultTimeoutMs = integer('timeout', values.timeout, 1);
  const maxTimeoutMs = integer('max-timeout', values['max-timeout'], 1);
  if (maxTimeoutMs !== undefined && maxTimeoutMs < (defaultTimeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS)) throw new UsageError('--max-timeout is below the default timeout');
  const outputBudget = integer('output-budget', values['output-budget'], MIN_OUTPUT_BUDGET);
  const maxUnreadBytes = integer('max-unread-bytes', values['max-unread-bytes'], 1);
  // A Docker container the adapter creates has no network unless --options names one; a borrowed container's is its own.
  const network = adapter !== 'docker' || factoryOptions['container'] !== undefined ? undefined : typeof factoryOptions['network'] === 'string' ? `the Docker network ${factoryOptions['network']}` : 'none (loopback only)';
  return {
    ...(prefix !== undefined && { toolPrefix: prefix }),
    ...(outputBudget !== undefined && { outputBudget }),
    ...(defaultTimeoutMs !== undefined && { defaultTimeoutMs }),
    ...(maxTimeoutMs !== undefined && { maxTimeoutMs }),
    ...(maxUnreadBytes !== undefined && { maxUnreadBytes }),
    ...(network !== undefined && { sandboxNetwork: network }),
  };
}

function parseOptions(): { adapter: string; factoryOptions: Record<string, unknown>; server: ExecServerOptions } {
  const { values } = parseArgs({
    options: {
      adapter: { type: 'string' },
      isolation: { type: 'string' },
      options: { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      'tool-prefix': { type: 'string' },
      'output-budget': { type: 'string' },
      timeout: { type: 'string' },
      'max-timeout': { type: 'string' },
      'max-unread-bytes': { type: 'string' },
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
  return { adapter: values.adapter, factoryOptions, server: serverOptions(values, values.adapter, factoryOptions) };
}

async function main(): Promise<void> {
  const { adapter, factoryOptions, server: options } = parseOptions();
  const sandbox = await openSandbox(adapter, factoryOptions);
  const server = createExecServer(sandbox, options);
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
