import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { InvalidArgument, type Sandbox } from '@sandstream/types';
import type { z } from 'zod';
import { execute, failure } from './exec.js';
import { callJobTool, jobInputSchemas, jobTools, type JobToolName } from './job-tools.js';
import { Jobs } from './jobs.js';
import type { OutputLine } from './line-splitter.js';
import { execInputSchema, inputJsonSchema, outputJsonSchema, type ExecInput } from './schema.js';
import { VERSION } from './version.js';

/** The `_meta` key of a progress notification that names the stream of its line. */
export const STREAM_META_KEY = 'dev.sandstream/stream';
/** The `_meta` key, set to true, of a progress notification that carries a piece of an overlong line. */
export const PARTIAL_META_KEY = 'dev.sandstream/partial';
/** The default of the `exec` tool's `maxOutputBytes`: 1 MiB per stream. */
export const DEFAULT_TOOL_OUTPUT_BYTES = 1024 * 1024;

/** Options of {@link createExecServer}. */
export interface ExecServerOptions {
  /** The server's name in the MCP handshake (default `sandstream-mcp`). */
  readonly name?: string;
  /**
   * Bytes kept per stream when an `exec` call gives no `maxOutputBytes`, and
   * unread bytes kept per stream of a background command (the oldest are
   * dropped, and counted, past it). Default {@link DEFAULT_TOOL_OUTPUT_BYTES}.
   */
  readonly maxOutputBytes?: number;
  /** Close the sandbox when the session ends (default true): nothing the server started outlives it. */
  readonly closeSandbox?: boolean;
}

/** An MCP server with the `exec` tool and the background tools (`start`, `read`, `write`, `kill`, `list`) over one sandbox. */
export interface ExecServer {
  /** The SDK's server, for what this package does not cover. */
  readonly mcp: McpServer;
  /** The sandbox the commands run in. */
  readonly sandbox: Sandbox;
  /** Starts the session over a transport (for a command-line server, the SDK's `StdioServerTransport`). */
  connect(transport: Transport): Promise<void>;
  /** Ends the session: running calls are aborted and background commands terminated (their whole trees), and the sandbox is closed. Idempotent. */
  close(): Promise<void>;
  /** Resolves once the session ended, however it ended, and the sandbox is closed. */
  readonly closed: Promise<void>;
}

const DESCRIPTION =
  'Runs a command in the sandbox and returns its exit code, signal, output and duration. ' +
  "Give `argv` (no shell) or `command` (a shell line, run with sh -c). With a progress token, each output line is sent as it is written (the stream in _meta['" +
  STREAM_META_KEY +
  "']). Cancelling the request terminates the command and everything it started.";

/** The first problem zod found, as the contract's InvalidArgument. */
function invalidArguments<T>(schema: z.ZodType<T>, args: unknown, tool: string): InvalidArgument | T {
  const parsed = schema.safeParse(args ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = ['arguments', ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') path.push(issue.keys[0] ?? '');
  return new InvalidArgument(path.join('.'), issue.code === 'unrecognized_keys' ? `is not an argument of ${tool}` : issue.message);
}

function invalidInput(args: unknown): InvalidArgument | ExecInput {
  const input = invalidArguments(execInputSchema, args, 'exec');
  if (input instanceof InvalidArgument) return input;
  if ((input.argv === undefined) === (input.command === undefined)) {
    return new InvalidArgument('arguments', 'give exactly one of argv and command');
  }
  return input;
}

const isJobTool = (name: string): name is JobToolName => Object.hasOwn(jobInputSchemas, name);

/**
 * Creates an MCP server whose `exec` tool runs commands in `sandbox`.
 *
 * @example
 * ```ts
 * import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * import { createExecServer } from '@sandstream/mcp';
 *
 * const server = createExecServer(createLocalSandbox(), { maxOutputBytes: 256 * 1024 });
 * await server.connect(new StdioServerTransport());
 * process.stdin.once('end', () => void server.close());
 * await server.closed; // the session ended and every command it started with it
 * ```
 */
export function createExecServer(sandbox: Sandbox, options: ExecServerOptions = {}): ExecServer {
  const cap = options.maxOutputBytes ?? DEFAULT_TOOL_OUTPUT_BYTES;
  const jobs = new Jobs(sandbox, cap);
  const mcp = new McpServer({ name: options.name ?? 'sandstream-mcp', version: VERSION }, { capabilities: { tools: {} } });
  // The low-level handlers rather than McpServer.registerTool: a call with bad
  // arguments must come back as a tool result carrying the spec's error code,
  // which registerTool's own validation does not give.
  mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: 'exec',
        title: `Run a command (${sandbox.name})`,
        description: DESCRIPTION,
        inputSchema: inputJsonSchema,
        outputSchema: outputJsonSchema,
        annotations: { destructiveHint: true, openWorldHint: true },
      },
      ...jobTools(sandbox.name),
    ],
  }));
  mcp.server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const name = request.params.name;
    if (isJobTool(name)) {
      const args = invalidArguments<Record<string, unknown>>(jobInputSchemas[name], request.params.arguments, name);
      if (args instanceof InvalidArgument) return failure(args);
      return callJobTool(jobs, name, args).catch((error: unknown) => failure(error));
    }
    if (name !== 'exec') {
      return failure(new InvalidArgument('name', `no tool named ${JSON.stringify(name)}; this server has exec, ${Object.keys(jobInputSchemas).join(', ')}`));
    }
    const input = invalidInput(request.params.arguments);
    if (input instanceof InvalidArgument) return failure(input);
    const token = request.params._meta?.progressToken;
    let progress = 0;
    const notify =
      token === undefined
        ? undefined
        : (line: OutputLine) =>
            extra.sendNotification({
              method: 'notifications/progress',
              params: {
                progressToken: token,
                progress: ++progress,
                message: line.text,
                _meta: { [STREAM_META_KEY]: line.stream, ...(line.partial && { [PARTIAL_META_KEY]: true }) },
              },
            });
    return execute(sandbox, input, cap, { signal: extra.signal, notify });
  });

  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  let ending: Promise<void> | undefined;
  const end = (): Promise<void> =>
    (ending ??= (async () => {
      // The SDK aborts the signals of running calls when the transport closes,
      // which terminates their commands; closing the sandbox ends the rest.
      try {
        // The background commands are the session's: they end with it, also when the sandbox stays open.
        await jobs.endAll();
        if (options.closeSandbox ?? true) await sandbox.close();
      } finally {
        markClosed();
      }
    })());
  // A failure to close is reported by close(); the session end has no caller to tell.
  mcp.server.onclose = () => void end().catch(() => undefined);

  return {
    mcp,
    sandbox,
    connect: (transport) => mcp.connect(transport),
    async close() {
      await mcp.close();
      await end();
    },
    closed,
  };
}
