// One `exec` call: the command run through Sandstream's stream(), each output
// line handed to `notify` as it completes, the bytes kept up to the cap.
import { CapabilityNotSupported, InvalidArgument, SandstreamError, type Process, type Sandbox, type StreamName, type StreamOptions, type TerminalSize } from '@sandstream/types';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { LineSplitter, type OutputLine } from './line-splitter.js';
import { composeText, HeadTail, NOTHING_OMITTED, type StreamOutput } from './output.js';
import { envOf, INTERNAL, type ExecFailure, type ExecInput, type ExecOutcome } from './schema.js';
import { TerminalText, terminalSize } from './terminal.js';

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

function streamOptions(input: ExecInput, timeout: number, signal: AbortSignal): StreamOptions {
  const env = envOf(input.env);
  const pty = terminalSize(input.pty);
  return {
    signal,
    timeout,
    ...(input.cwd !== undefined && { cwd: input.cwd }),
    ...(env !== undefined && { env }),
    ...(input.stdin !== undefined && { input: input.stdin }),
    ...(pty !== undefined && { pty }),
  };
}

/**
 * The terminal arguments checked against the sandbox before anything runs:
 * `pty` needs the capability, and `raw` means something only with `pty`.
 */
export function checkTerminal(sandbox: Sandbox, input: { pty?: boolean | TerminalSize | undefined; raw?: boolean | undefined }, tool: string): void {
  const pty = terminalSize(input.pty);
  if (pty !== undefined && sandbox.capabilities.pty !== true) {
    const error = new CapabilityNotSupported('pty', `${tool} with pty`);
    error.message = `${tool} with pty needs a terminal, and the sandbox ${sandbox.name} has none (no "pty" capability): run the command without pty`;
    throw error;
  }
  if (input.raw === true && pty === undefined) throw new InvalidArgument('arguments.raw', 'is for a command on a terminal (pty)');
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
    // The key in the text too: the model reads the text, and "arguments.timeout: is at most ..." says what to change
    // (InvalidArgument's own message starts with it; it is not said twice).
    content: [{ type: 'text', text: `${failed.error.code}${failed.error.key === undefined || message.startsWith(`${failed.error.key}: `) ? '' : ` (${failed.error.key})`}: ${message}` }],
    structuredContent: { ...failed },
  };
}

/** How `exec` runs commands: the server's settings. */
export interface ExecSettings {
  /** Characters of one result's text. */
  readonly budget: number;
  /** The time limit of a call that gives none, and the highest one a call may give (milliseconds). */
  readonly defaultTimeoutMs: number;
  readonly maxTimeoutMs: number;
  /** The names of the background tools, as the messages of this call name them. */
  readonly startTool: string;
  readonly readTool: string;
}

// Where the whole output can be read once it was cut. The server cannot keep
// it: its memory must not grow with a command's output. It does not save it
// to a file in the sandbox either: that would write an unbounded amount into
// the sandbox on every large command, needs a writable path and a second
// command on every adapter (a remote one sends every byte back over its
// link), and leaves files nobody asked for. Nor does it point at the
// background tools: their reads pass through the same budget and their
// unread buffer drops the oldest bytes of a fast writer. A file of the
// model's own, made by running the command again with a redirection, holds
// all of it on any adapter, and sed, grep and tail read it in pieces of any
// size; the model decides whether running the command again is safe.
const READ_ALL =
  'The whole output was not kept: to read all of it, run the command again with its output redirected to a file in a writable directory ' +
  "(e.g. `cmd > /tmp/out.log 2>&1`), then read parts of that file with sed -n '1,200p', grep or tail.";

/** The first line of a result: how the command ended, then the flags. */
function statusLine(outcome: ExecOutcome): string {
  const parts = [outcome.signal === null ? `exit code ${outcome.exitCode}` : `no exit code: ended by ${outcome.signal}`];
  if (outcome.timedOut) parts.push(`TIMED OUT at the ${outcome.timeoutMs} ms limit (the command and everything it started were terminated; the output below is what it wrote until then)`);
  if (outcome.truncated) parts.push('output TRUNCATED to fit the result (head and tail kept, see the marker)');
  if (outcome.terminal !== undefined) parts.push(`on a ${outcome.terminal.cols}x${outcome.terminal.rows} terminal`);
  parts.push(`${Math.round(outcome.durationMs)} ms`);
  return parts.join('; ');
}

/** The output of a stream as `HeadTail` kept it; on a terminal, as text unless `raw`. */
function streamOutput(stream: StreamName, kept: HeadTail, asText: boolean): StreamOutput {
  const text = kept.text();
  const converted = !asText ? text : 'whole' in text ? { whole: TerminalText.of(text.whole) } : { head: TerminalText.of(text.head), tail: TerminalText.of(text.tail) };
  return { stream, text: converted, bytes: kept.bytes, lines: kept.lines };
}

/**
 * Runs one validated `exec` input. Never rejects: a Sandstream error (a
 * missing binary, a bad cwd, a closed sandbox, the caller's abort) becomes a
 * result with `isError: true`.
 */
export async function execute(sandbox: Sandbox, input: ExecInput, settings: ExecSettings, call: ExecCall): Promise<CallToolResult> {
  const argv = input.argv ?? ['sh', '-c', input.command ?? ''];
  const timeout = input.timeout ?? settings.defaultTimeoutMs;
  const terminal = terminalSize(input.pty);
  let proc: Process;
  try {
    if (timeout > settings.maxTimeoutMs) {
      throw new InvalidArgument('arguments.timeout', `is at most ${settings.maxTimeoutMs} ms here; run a longer command with ${settings.startTool} and follow it with ${settings.readTool}`);
    }
    checkTerminal(sandbox, input, 'exec');
    proc = sandbox.stream(argv, streamOptions(input, timeout, call.signal));
  } catch (error) {
    return failure(error, input);
  }
  // Bounded whatever the output: the head and the tail, each as long as a whole result.
  const kept: Record<StreamName, HeadTail> = { stdout: new HeadTail(settings.budget), stderr: new HeadTail(settings.budget) };
  const splitter = call.notify === undefined ? undefined : new LineSplitter(MAX_LINE_CHARS);
  // On a terminal, a line is sent as text too, unless the caller asked for the bytes.
  const asText = terminal !== undefined && input.raw !== true;
  const text = asText ? new TerminalText() : undefined;
  const send = async (line: OutputLine): Promise<void> => {
    if (text !== undefined) {
      text.write(line.text);
      line = { ...line, text: text.take() };
      if (line.text === '') return;
    }
    await sent(call.notify!(line), call.signal);
  };
  try {
    for await (const chunk of proc) {
      kept[chunk.stream].add(chunk.data);
      if (splitter !== undefined) for (const line of splitter.push(chunk.stream, chunk.data)) await send(line);
    }
    if (splitter !== undefined) for (const line of splitter.end()) await send(line);
    const result = await proc.wait();
    const outputs = [streamOutput('stdout', kept.stdout, asText), streamOutput('stderr', kept.stderr, asText)];
    const draft = { exitCode: result.exitCode, signal: result.signal, timedOut: result.timedOut, timeoutMs: timeout, durationMs: result.durationMs, ...(terminal !== undefined && { terminal }) };
    // The status line says whether the output was cut, so the cut is made first with room for the longest status line.
    const trial = composeText(statusLine({ ...draft, truncated: true, omitted: { stdout: NOTHING_OMITTED, stderr: NOTHING_OMITTED } }), outputs, settings.budget, READ_ALL);
    const omitted = { stdout: trial.sections.stdout.omitted, stderr: trial.sections.stderr.omitted };
    const outcome: ExecOutcome = { ...draft, truncated: omitted.stdout.bytes + omitted.stderr.bytes + omitted.stdout.lines + omitted.stderr.lines > 0, omitted };
    const status = statusLine(outcome);
    const body = trial.text.slice(trial.text.indexOf('\n') + 1);
    return { content: [{ type: 'text', text: `${status}\n${body}` }], structuredContent: { ...outcome } };
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
