// The server as a client sees it: the built CLI spawned over stdio and driven
// by the MCP SDK's own Client.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ProgressNotificationSchema, type CallToolResult, type Progress, type ProgressToken } from '@modelcontextprotocol/sdk/types.js';
import { PARTIAL_META_KEY, STREAM_META_KEY, type ExecFailure, type ExecOutcome, type JobOutput } from '../src/index.js';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

export interface Session {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  /** The server's pid. */
  readonly pid: number;
  readonly stderr: string[];
}

/**
 * Spawns `node dist/cli.js <args>` and completes the MCP handshake. The
 * server's environment is the SDK's default (a few variables of this
 * process: HOME, LOGNAME, PATH, SHELL, TERM, USER) with `env` over it.
 */
export async function connect(args: readonly string[] = ['--adapter', 'local'], env?: Record<string, string>): Promise<Session> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, ...args], stderr: 'pipe', ...(env !== undefined && { env }) });
  const stderr: string[] = [];
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const client = new Client({ name: 'sandstream-mcp-tests', version: '0.0.0' });
  routeProgress(client);
  await client.connect(transport);
  return { client, transport, pid: transport.pid!, stderr };
}

// The SDK client's own `onprogress` loses the progress notifications that
// reach it in the same read as the response: it dispatches the response at
// once and notifications a microtask later, and the response has retired the
// token by then (modelcontextprotocol/typescript-sdk#2580, open for 1.32.2).
// The tests route progress themselves, by a token of their own, so every
// notification the server wrote before its response is counted: those of
// the same read run before the caller's await of the response resumes.
const routes = new WeakMap<Client, Map<ProgressToken, (progress: Progress & { _meta?: Record<string, unknown> | undefined }) => void>>();
let nextToken = 0;

function routeProgress(client: Client): void {
  const table = new Map<ProgressToken, (progress: Progress & { _meta?: Record<string, unknown> | undefined }) => void>();
  routes.set(client, table);
  client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
    const { progressToken, ...progress } = notification.params;
    const route = table.get(progressToken);
    if (route === undefined) throw new Error(`progress for a token no call holds: ${JSON.stringify(notification)}`);
    route(progress);
  });
}

/** One progress notification as the test keeps it. */
export interface SeenLine {
  readonly stream: string;
  readonly text: string;
  readonly progress: number;
  /** The server flagged it as a piece of a line longer than MAX_LINE_CHARS. */
  readonly partial: boolean;
}

export function lineOf(progress: Progress & { _meta?: Record<string, unknown> | undefined }): SeenLine {
  return { stream: String(progress._meta?.[STREAM_META_KEY]), text: progress.message ?? '', progress: progress.progress, partial: progress._meta?.[PARTIAL_META_KEY] === true };
}

/** Calls exec with a progress token; `onLine` sees each line as it arrives. */
export async function execWithProgress(
  client: Client,
  args: Record<string, unknown>,
  onLine: (line: SeenLine) => void = () => {},
  options: { signal?: AbortSignal; timeout?: number; keep?: boolean } = {},
): Promise<{ result: CallToolResult; lines: SeenLine[] }> {
  const { keep = true, ...requestOptions } = options;
  const lines: SeenLine[] = [];
  const table = routes.get(client)!;
  const progressToken = `test-${++nextToken}`;
  table.set(progressToken, (progress) => {
    const line = lineOf(progress);
    if (keep) lines.push(line);
    onLine(line);
  });
  try {
    const result = (await client.callTool({ name: 'sandbox_exec', arguments: args, _meta: { progressToken } }, undefined, requestOptions)) as CallToolResult;
    return { result, lines };
  } finally {
    table.delete(progressToken);
  }
}

/** The result's text content. */
export function textOf(result: CallToolResult): string {
  const block = result.content[0];
  if (block?.type !== 'text') throw new Error(`no text content: ${JSON.stringify(result.content)}`);
  return block.text;
}

/** What a result's text shows of a stream (between its tags), '' when it has none. */
export function streamText(text: string, stream: 'stdout' | 'stderr'): string {
  const start = text.indexOf(`\n<${stream}>\n`);
  if (start === -1) return '';
  const from = start + stream.length + 4;
  return text.slice(from, text.indexOf(`</${stream}>`, from));
}

/** An exec result: its structuredContent, with the text and the streams the text shows. */
export function outcome(result: CallToolResult): ExecOutcome & { readonly text: string; readonly stdout: string; readonly stderr: string } {
  if (result.isError === true) throw new Error(`exec failed: ${JSON.stringify(result.content)}`);
  const text = textOf(result);
  return { ...(result.structuredContent as unknown as ExecOutcome), text, stdout: streamText(text, 'stdout'), stderr: streamText(text, 'stderr') };
}

/** A read result: its structuredContent, with the text and the streams the text shows. */
export function readOf(result: CallToolResult): JobOutput & { readonly text: string; readonly stdout: string; readonly stderr: string } {
  if (result.isError === true) throw new Error(`read failed: ${JSON.stringify(result.content)}`);
  const text = textOf(result);
  return { ...(result.structuredContent as unknown as JobOutput), text, stdout: streamText(text, 'stdout'), stderr: streamText(text, 'stderr') };
}

export function failureOf(result: CallToolResult): ExecFailure['error'] {
  if (result.isError !== true) throw new Error(`exec succeeded: ${JSON.stringify(result.structuredContent)}`);
  return (result.structuredContent as unknown as ExecFailure).error;
}

/** Resolves with the first line `predicate` accepts; used as an event to act on. */
export function lineWaiter(predicate: (line: SeenLine) => boolean): { onLine: (line: SeenLine) => void; seen: Promise<SeenLine> } {
  let resolve!: (line: SeenLine) => void;
  const seen = new Promise<SeenLine>((r) => (resolve = r));
  return { onLine: (line) => predicate(line) && resolve(line), seen };
}
