// One `exec` call: the command run through Sandstream's stream(), each output
// line handed to `notify` as it completes, the bytes kept up to the cap.
import { InvalidArgument, SandstreamError, type Process, type Sandbox, type StreamOptions, type StreamName } from '@sandstream/types';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Capture } from '@sandstream/types/runtime';
import { LineSplitter, type OutputLine } from './line-splitter.js';
import { INTERNAL, type ExecFailure, type ExecInput, type ExecOutcome } from './schema.js';

/** The longest unfinished line held per stream before it is sent in pieces (characters). */
export const MAX_LINE_CHARS = 64 * 1024;

/** How one call reports and ends. */
export interface ExecCall {
  /** The MCP request's signal: aborted by `notifications/cancelled` or the end of the session. */
  readonly signal: AbortSignal;
  /**
   * Sends one line as a progress notification; resolves once the transport
   * took it, so a slow client slows the reading of the command's output
   * instead of queueing it in memory. Absent when the client asked for no
   * progress.
   */
  readonly notify?: ((line: OutputLine) => Promise<void>) | undefined;
}

/**
 * Waits for a notification to be written, or for the call to be aborted: a
 * client that died mid-output never drains the pipe, and the call must still
 * end (the loop then ends with the abort's error).
 */
function sent(notification: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    notification.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function streamOptions(input: ExecInput, signal: AbortSignal): StreamOptions {
  return {
    signal,
    ...(input.cwd !== undefined && { cwd: input.cwd }),
    ...(input.env !== undefined && { env: input.env }),
    ...(input.timeout !== undefined && { timeout: input.timeout }),
    ...(input.stdin !== undefined && { input: input.stdin }),
  };
}

/**
 * The tool argument a Sandstream `InvalidArgument` key names: `argv[1]` is
 * `arguments.argv[1]` (the shell line, `argv[2]` of `sh -c`, is
 * `arguments.command`), `options.input` is `arguments.stdin`, and
 * `options.<name>` is `arguments.<name>`.
 */
function argumentKey(key: string, input: ExecInput | undefined): string {
  if (key.startsWith('arguments')) return key;
  if (input?.command !== undefined && /^argv(\[\d+\])?$/.test(key)) return 'arguments.command';
  if (key.startsWith('argv')) return `arguments.${key}`;
  if (key === 'options.input') return 'arguments.stdin';
  if (key.startsWith('options.')) return `arguments.${key.slice('options.'.length)}`;
  return key;
}

/** A tool result with `isError`, carrying the error's code. */
export function failure(error: unknown, input?: ExecInput): CallToolResult {
  const message = error instanceof Error ? error.message : String(error);
  const failed: ExecFailure = {
    error: {
      code: error instanceof SandstreamError ? error.code : INTERNAL,
      message,
      ...(error instanceof InvalidArgument && { key: argumentKey(error.key, input) }),
    },
  };
  return {
    isError: true,
    content: [{ type: 'text', text: `${failed.error.code}: ${message}` }],
    structuredContent: { ...failed },
  };
}

function summary(argv: readonly string[], outcome: ExecOutcome, cap: number): string {
  const how = outcome.signal !== null ? `killed by ${outcome.signal}` : `exit code ${outcome.exitCode}`;
  const notes = [how, `${Math.round(outcome.durationMs)} ms`];
  if (outcome.timedOut) notes.push('timed out');
  if (outcome.truncated) notes.push(`output truncated to ${cap} bytes per stream`);
  const parts = [`$ ${JSON.stringify(argv)}`, notes.join(', ')];
  if (outcome.stdout !== '') parts.push(`stdout:\n${outcome.stdout}`);
  if (outcome.stderr !== '') parts.push(`stderr:\n${outcome.stderr}`);
  return parts.join('\n');
}

/**
 * Runs one validated `exec` input. Never rejects: a Sandstream error (a
 * missing binary, a bad cwd, a closed sandbox, the caller's abort) becomes a
 * result with `isError: true`.
 */
export async function execute(sandbox: Sandbox, input: ExecInput, defaultCap: number, call: ExecCall): Promise<CallToolResult> {
  const argv = input.argv ?? ['sh', '-c', input.command ?? ''];
  const cap = input.maxOutputBytes ?? defaultCap;
  let proc: Process;
  try {
    proc = sandbox.stream(argv, streamOptions(input, call.signal));
  } catch (error) {
    return failure(error, input);
  }
  const kept: Record<StreamName, Capture> = { stdout: new Capture(cap), stderr: new Capture(cap) };
  const splitter = call.notify === undefined ? undefined : new LineSplitter(MAX_LINE_CHARS);
  try {
    for await (const chunk of proc) {
      kept[chunk.stream].add(chunk.data);
      if (splitter !== undefined) for (const line of splitter.push(chunk.stream, chunk.data)) await sent(call.notify!(line), call.signal);
    }
    if (splitter !== undefined) for (const line of splitter.end()) await sent(call.notify!(line), call.signal);
    const result = await proc.wait();
    const outcome: ExecOutcome = {
      exitCode: result.exitCode,
      signal: result.signal,
      timedOut: result.timedOut,
      truncated: kept.stdout.truncated || kept.stderr.truncated,
      durationMs: result.durationMs,
      stdout: kept.stdout.text(),
      stderr: kept.stderr.text(),
    };
    return { content: [{ type: 'text', text: summary(argv, outcome, cap) }], structuredContent: { ...outcome } };
  } catch (error) {
    return failure(error, input);
  } finally {
    // However the loop was left (a failed notification, an abort), the
    // command's tree is terminated before the call returns. A failure to
    // confirm it is not the call's result; the sandbox's close at the end of
    // the session terminates what is left.
    await proc[Symbol.asyncDispose]().catch(() => undefined);
  }
}
