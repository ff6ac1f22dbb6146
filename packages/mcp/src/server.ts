import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type CreateTaskResult } from '@modelcontextprotocol/sdk/types.js';
import { InvalidArgument, type Sandbox } from '@sandstream/types';
import type { z } from 'zod';
import { execute, failure, type ExecSettings } from './exec.js';
import { sandboxFacts } from './facts.js';
import { callJobTool, jobInputSchemas, jobTools, type JobToolName } from './job-tools.js';
import { Jobs } from './jobs.js';
import type { OutputLine } from './line-splitter.js';
import { DEFAULT_OUTPUT_BUDGET, MIN_OUTPUT_BUDGET } from './output.js';
import { DEFAULT_EXEC_TIMEOUT_MS, execInputSchema, inputJsonSchema, MAX_EXEC_TIMEOUT_MS, outputJsonSchema, withoutTerminal, type ExecInput } from './schema.js';
import { ShellSession, shellInputSchema } from './shell.js';
import { strictJsonSchema, withoutNulls } from './strict-schema.js';
import { SessionTasks, TASKS_CAPABILITY } from './tasks.js';
import { DEFAULT_TOOL_PREFIX, execText, jobText, shellText, toolNames, TOOLS } from './tool-text.js';
import { VERSION } from './version.js';

/** The `_meta` key of a progress notification that names the stream of its line. */
export const STREAM_META_KEY = 'dev.sandstream/stream';
/** The `_meta` key, set to true, of a progress notification that carries a piece of an overlong line. */
export const PARTIAL_META_KEY = 'dev.sandstream/partial';
/** The default bound of a background command's unread output: 1 MiB per stream. */
export const DEFAULT_UNREAD_BYTES = 1024 * 1024;

/**
 * Options of {@link createExecServer}.
 *
 * @example
 * ```ts
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * import { createExecServer, type ExecServerOptions } from '@sandstream/mcp';
 *
 * // Tools named box_exec, box_start, ...; results of at most 12 000 characters; exec's limit 20 s, at most 2 min.
 * const options: ExecServerOptions = { toolPrefix: 'box_', outputBudget: 12_000, defaultTimeoutMs: 20_000, maxTimeoutMs: 120_000 };
 * const server = createExecServer(createLocalSandbox(), options);
 * ```
 */
export interface ExecServerOptions {
  /** The server's name in the MCP handshake (default `sandstream-mcp`). */
  readonly name?: string;
  /**
   * Characters of one result's text (default {@link DEFAULT_OUTPUT_BUDGET},
   * at least {@link MIN_OUTPUT_BUDGET}). Output past it is cut in the
   * middle: the head and the tail are kept around a marker line.
   */
  readonly outputBudget?: number;
  /** Unread bytes kept per stream of a background command; past it the oldest are dropped, and counted (default {@link DEFAULT_UNREAD_BYTES}). */
  readonly maxUnreadBytes?: number;
  /** The time limit of an `exec` call that gives no `timeout`, in milliseconds (default {@link DEFAULT_EXEC_TIMEOUT_MS}). */
  readonly defaultTimeoutMs?: number;
  /** The highest `timeout` an `exec` call may give, in milliseconds (default {@link MAX_EXEC_TIMEOUT_MS}, at least `defaultTimeoutMs`). */
  readonly maxTimeoutMs?: number;
  /** The prefix of the tools' names (default {@link DEFAULT_TOOL_PREFIX}: `sandbox_exec`, ...; `''` for `exec`, ...): letters, digits, `_` and `-`. */
  readonly toolPrefix?: string;
  /**
   * What the tool descriptions say of the sandbox's isolation, network and
   * writable paths, in place of what the server finds out (adapter-local's
   * mode; for another adapter, only its name): for a sandbox of your own.
   */
  readonly sandboxDescription?: string;
  /** For an adapter other than local: its network, as the descriptions state it (e.g. `none`). */
  readonly sandboxNetwork?: string;
  /** Close the sandbox when the session ends (default true): nothing the server started outlives it. */
  readonly closeSandbox?: boolean;
}

/** An MCP server over one sandbox: the `exec` tool, the session shell `shell` (both also as MCP tasks, for a client that asks), and the background tools (`start`, `read`, `write`, `kill`, `list`, and `resize` where the sandbox has terminals), each named with the server's prefix (`sandbox_exec`, ...). */
export interface ExecServer {
  /** The SDK's server, for what this package does not cover. */
  readonly mcp: McpServer;
  /** The sandbox the commands run in. */
  readonly sandbox: Sandbox;
  /** Starts the session over a transport (for a command-line server, the SDK's `StdioServerTransport`). */
  connect(transport: Transport): Promise<void>;
  /** Ends the session: running calls and tasks are aborted, background commands terminated (their whole trees), the session shell's state file removed, and the sandbox closed. Idempotent. */
  close(): Promise<void>;
  /** Resolves once the session ended, however it ended, and the sandbox is closed. */
  readonly closed: Promise<void>;
}

/** The first problem zod found, as the contract's InvalidArgument. */
function invalidArguments<T>(schema: z.ZodType<T>, args: unknown, tool: string): InvalidArgument | T {
  const parsed = schema.safeParse(withoutNulls(args ?? {}));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = ['arguments', ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') path.push(issue.keys[0] ?? '');
  return new InvalidArgument(path.join('.'), issue.code === 'unrecognized_keys' ? `is not an argument of ${tool}` : issue.message);
}

function invalidInput(args: unknown, tool: string): InvalidArgument | ExecInput {
  const input = invalidArguments(execInputSchema, args, tool);
  if (input instanceof InvalidArgument) return input;
  if ((input.argv === undefined) === (input.command === undefined)) {
    return new InvalidArgument('arguments', 'give exactly one of argv and command');
  }
  return input;
}

const isJobTool = (name: string): name is JobToolName => Object.hasOwn(jobInputSchemas, name);

function positiveInteger(value: number, what: string, least = 1): number {
  if (!Number.isSafeInteger(value) || value < least) throw new RangeError(`${what} must be an integer of at least ${least}, got ${value}`);
  return value;
}

/**
 * Creates an MCP server whose `exec` tool runs commands in `sandbox`.
 *
 * @example
 * ```ts
 * import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * import { createExecServer } from '@sandstream/mcp';
 *
 * const server = createExecServer(createLocalSandbox({ isolation: 'namespaces' }), { outputBudget: 20_000, toolPrefix: 'box_' });
 * await server.connect(new StdioServerTransport());
 * process.stdin.once('end', () => void server.close());
 * await server.closed; // the session ended and every command it started with it
 * ```
 */
export function createExecServer(sandbox: Sandbox, options: ExecServerOptions = {}): ExecServer {
  const budget = positiveInteger(options.outputBudget ?? DEFAULT_OUTPUT_BUDGET, 'outputBudget', MIN_OUTPUT_BUDGET);
  const defaultTimeoutMs = positiveInteger(options.defaultTimeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS, 'defaultTimeoutMs');
  const maxTimeoutMs = positiveInteger(options.maxTimeoutMs ?? Math.max(MAX_EXEC_TIMEOUT_MS, defaultTimeoutMs), 'maxTimeoutMs', defaultTimeoutMs);
  const names = toolNames(options.toolPrefix ?? DEFAULT_TOOL_PREFIX);
  const jobs = new Jobs(sandbox, positiveInteger(options.maxUnreadBytes ?? DEFAULT_UNREAD_BYTES, 'maxUnreadBytes'));
  // exec and the session shell run as MCP tasks for a client that asks (ADR-0056).
  const tasks = new SessionTasks();
  const mcp = new McpServer({ name: options.name ?? 'sandstream-mcp', version: VERSION }, { capabilities: { tools: {}, tasks: TASKS_CAPABILITY }, taskStore: tasks });
  // The low-level handlers rather than McpServer.registerTool: a call with bad
  // arguments must come back as a tool result carrying the spec's error code,
  // which registerTool's own validation does not give.
  const pty = sandbox.capabilities.pty === true;
  const described = {
    names,
    facts: sandboxFacts(sandbox, { network: options.sandboxNetwork, override: options.sandboxDescription }),
    budget,
    defaultTimeoutMs,
    maxTimeoutMs,
    pty,
  };
  const settings: ExecSettings = { budget, defaultTimeoutMs, maxTimeoutMs, startTool: names.start, readTool: names.read };
  const byName = new Map<string, (typeof TOOLS)[number]>(TOOLS.map((tool) => [names[tool], tool]));
  mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: names.exec,
        ...execText(described),
        inputSchema: pty ? inputJsonSchema : withoutTerminal(inputJsonSchema),
        outputSchema: outputJsonSchema,
        annotations: { destructiveHint: true, openWorldHint: true },
        execution: { taskSupport: 'optional' },
      },
      {
        name: names.shell,
        ...shellText(described),
        inputSchema: strictJsonSchema(shellInputSchema),
        outputSchema: outputJsonSchema,
        annotations: { destructiveHint: true, openWorldHint: true },
        execution: { taskSupport: 'optional' },
      },
      ...jobTools(names, jobText(described), pty),
    ],
  }));
  // One session shell per server, which is one MCP session.
  const shell = new ShellSession(sandbox, names.shell);
  mcp.server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult | CreateTaskResult> => {
    const name = byName.get(request.params.name);
    const asTask = request.params.task !== undefined;
    if (asTask && (name === undefined || isJobTool(name))) {
      // Answered at once, these are never tasks (taskSupport absent: forbidden).
      throw new McpError(ErrorCode.MethodNotFound, `${request.params.name} cannot run as a task: only ${names.exec} and ${names.shell} can; call it without "task"`);
    }
    if (name === undefined) {
      return failure(new InvalidArgument('name', `no tool named ${JSON.stringify(request.params.name)}; this server has ${TOOLS.map((tool) => names[tool]).join(', ')}`));
    }
    if (isJobTool(name)) {
      const args = invalidArguments<Record<string, unknown>>(jobInputSchemas[name], request.params.arguments, names[name]);
      if (args instanceof InvalidArgument) return failure(args);
      return callJobTool(sandbox, jobs, name, args, budget).catch((error: unknown) => failure(error));
    }
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
    const run = (signal: AbortSignal): Promise<CallToolResult> => {
      if (name === 'shell') {
        const input = invalidArguments(shellInputSchema, request.params.arguments, names.shell);
        if (input instanceof InvalidArgument) return Promise.resolve(failure(input));
        return shell.call(input, settings, { signal, notify });
      }
      const input = invalidInput(request.params.arguments, names.exec);
      if (input instanceof InvalidArgument) return Promise.resolve(failure(input));
      return execute(sandbox, input, settings, { signal, notify });
    };
    // A task's command outlives the request, so it has an abort of its own: tasks/cancel, or the session's end.
    if (asTask && extra.taskStore !== undefined) return tasks.start(extra.taskStore, extra.taskRequestedTtl, run);
    return run(extra.signal);
  });

  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  let ending: Promise<void> | undefined;
  const end = (): Promise<void> =>
    (ending ??= (async () => {
      // The SDK aborts the signals of running calls when the transport closes,
      // which terminates their commands; closing the sandbox ends the rest.
      try {
        // The background commands and the tasks are the session's: they end with it, also when the sandbox stays open.
        await tasks.endAll();
        await jobs.endAll();
        await shell.discard();
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
