// The exec tool: a command in a Sandstream sandbox, reported to the AI SDK
// as preliminary results while it runs and one final result when it ends.
import { tool, type Tool } from '@ai-sdk/provider-utils';
import type { OutputChunk, Sandbox, StreamOptions } from '@sandstream/types';
import { z } from 'zod';
import { OutputTracker } from './output-tracker.js';

/** Options of {@link execTool}. */
export interface ExecToolOptions {
  /** The tool's description for the model. Absent: one naming the sandbox. */
  readonly description?: string;
  /** Where commands start when the call gives no `cwd`. Absent: the sandbox's default. */
  readonly cwd?: string;
  /** The timeout of a call that gives none, in milliseconds (default 120 000). */
  readonly timeout?: number;
  /** The longest timeout a call may ask for, in milliseconds (default 600 000). */
  readonly maxTimeout?: number;
  /** Bytes of each stream the final result keeps (default 64 KiB); past it the output still counts and shows in the tail. */
  readonly maxOutputBytes?: number;
  /** Characters of output a preliminary result shows, both streams in arrival order (default 2000). */
  readonly tailChars?: number;
  /**
   * The least time between two preliminary results, in milliseconds (default 250). While the
   * command writes nothing, one still comes every second (every `progressIntervalMs`, if longer).
   */
  readonly progressIntervalMs?: number;
}

/** What the model sends. */
export interface ExecToolInput {
  /** A shell command line, run with `sh -c`. */
  command: string;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  /** Milliseconds; the command's tree is terminated when it expires. */
  timeout?: number | undefined;
  /** Text written to the command's standard input, which is then closed. */
  stdin?: string | undefined;
}

/** A preliminary result: the command is still running. */
export interface ExecToolProgress {
  status: 'running';
  /** The last characters of stdout and stderr, in arrival order. */
  tail: string;
  stdoutLines: number;
  stderrLines: number;
  stdoutBytes: number;
  stderrBytes: number;
  elapsedMs: number;
}

/** The final result: the command ended. */
export interface ExecToolResult {
  status: 'exited';
  /** 0-255, or null when a signal ended the command. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** True when a stream was longer than the cap; `stdout` and `stderr` then hold its start. */
  truncated: boolean;
  durationMs: number;
  stdout: string;
  stderr: string;
  stdoutLines: number;
  stderrLines: number;
}

/** What the tool yields: preliminary results, then one final result. */
export type ExecToolOutput = ExecToolProgress | ExecToolResult;

const TICK = Symbol('tick');

/** The most time between two preliminary results while the command writes nothing (or `progressIntervalMs`, if longer). */
const IDLE_PROGRESS_MS = 1000;

/** `promise`, or {@link TICK} after `ms`, whichever comes first. */
function orTick<T>(promise: Promise<T>, ms: number): Promise<T | typeof TICK> {
  let timer: NodeJS.Timeout | undefined;
  const tick = new Promise<typeof TICK>((resolve) => (timer = setTimeout(resolve, ms, TICK)));
  return Promise.race([promise, tick]).finally(() => clearTimeout(timer));
}

function inputSchema(maxTimeout: number) {
  return z
    .object({
      command: z.string().min(1).describe('A shell command line, run with sh -c.'),
      cwd: z.string().optional().describe('The working directory.'),
      env: z.record(z.string(), z.string()).optional().describe('Environment variables added to the defaults.'),
      timeout: z.number().int().positive().max(maxTimeout).optional().describe('Milliseconds before the command is terminated.'),
      stdin: z.string().optional().describe('Text written to standard input, which is then closed.'),
    })
    .strict();
}

/**
 * An AI SDK tool that runs a shell command in `sandbox`. Its `execute` is an
 * async generator: the AI SDK passes each yielded value on as a preliminary
 * tool result (`preliminary: true` in `streamText`'s stream and in UI
 * messages) and gives the model only the last, final one.
 *
 * - A preliminary result (`status: 'running'`) comes once the command has
 *   started, then after new output at most every `progressIntervalMs`, and
 *   every second while it writes nothing: the output's tail and the line and
 *   byte counts so far.
 * - The final result (`status: 'exited'`) has the exit code, signal, timeout
 *   and truncation flags, duration, and each stream's start up to the cap.
 * - The call's `abortSignal` is the command's signal: aborting the
 *   generation terminates the command's whole tree, with the sandbox's grace
 *   period, and the call fails with the abort.
 * - The generator's `return()` terminates the tree too, before it resolves.
 *   A consumer that stops pulling is seen at the next yield only, which a
 *   silent command reaches by those results every second. A `break` out of
 *   `streamText`'s `fullStream` does neither (the AI SDK runs the tool on):
 *   abort the generation to stop its command.
 *
 * @example
 * ```ts
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * import { execTool } from '@sandstream/ai-sdk';
 * const tools = { exec: execTool(createLocalSandbox(), { timeout: 60_000 }) };
 * ```
 */
export function execTool(sandbox: Sandbox, options: ExecToolOptions = {}): Tool<ExecToolInput, ExecToolOutput> {
  const cap = options.maxOutputBytes ?? 64 * 1024;
  const tailChars = options.tailChars ?? 2000;
  const interval = options.progressIntervalMs ?? 250;
  const idle = Math.max(interval, IDLE_PROGRESS_MS);
  const maxTimeout = options.maxTimeout ?? 600_000;

  async function* execute(input: ExecToolInput, call: { abortSignal?: AbortSignal }): AsyncGenerator<ExecToolOutput, void> {
    const cwd = input.cwd ?? options.cwd;
    const streamOptions: StreamOptions = {
      timeout: Math.min(input.timeout ?? options.timeout ?? 120_000, maxTimeout),
      ...(cwd !== undefined && { cwd }),
      ...(input.env !== undefined && { env: input.env }),
      ...(input.stdin !== undefined && { input: input.stdin }),
      ...(call.abortSignal !== undefined && { signal: call.abortSignal }),
    };
    const proc = sandbox.stream(['sh', '-c', input.command], streamOptions);
    const start = performance.now();
    const output = new OutputTracker(cap, tailChars);
    const progress = (): ExecToolProgress => ({
      status: 'running',
      tail: output.tail(),
      stdoutLines: output.lines('stdout', false),
      stderrLines: output.lines('stderr', false),
      stdoutBytes: output.counts.stdout.bytes,
      stderrBytes: output.counts.stderr.bytes,
      elapsedMs: Math.round(performance.now() - start),
    });
    try {
      await proc.started();
      yield progress();
      // New output is shown at most every `interval` (the first at once), and a silent command
      // still gets a preliminary result every `idle`: not only for the elapsed time, but because a
      // consumer that went away is seen at a yield only (the AI SDK returns the generator when it
      // cannot pass a preliminary result on), so `idle` bounds how long the command outlives it.
      let lastShown = Number.NEGATIVE_INFINITY; // the last preliminary result after the first
      let lastYield = performance.now();
      let unreported = false;
      const chunks = proc[Symbol.asyncIterator]();
      const pull = (): Promise<IteratorResult<OutputChunk, undefined>> => {
        const next = chunks.next();
        // Left pending when the consumer stops early: its rejection is the dispose's business.
        next.catch(() => undefined);
        return next;
      };
      let next = pull();
      for (;;) {
        const now = performance.now();
        const wait = (unreported ? lastShown + interval : lastYield + idle) - now;
        if (wait <= 0) {
          unreported = false;
          lastShown = lastYield = now;
          yield progress();
          continue;
        }
        const step = await orTick(next, wait);
        if (step === TICK) continue;
        if (step.done === true) break;
        output.push(step.value);
        unreported = true;
        next = pull();
      }
      const result = await proc.wait();
      yield {
        status: 'exited',
        exitCode: result.exitCode,
        signal: result.signal,
        timedOut: result.timedOut,
        truncated: output.truncated,
        durationMs: Math.round(result.durationMs),
        stdout: output.text('stdout'),
        stderr: output.text('stderr'),
        stdoutLines: output.lines('stdout', true),
        stderrLines: output.lines('stderr', true),
      };
    } finally {
      // However the generator is left (the end, an abort, a consumer that
      // stopped pulling), the command's tree is gone before it returns.
      await proc[Symbol.asyncDispose]();
    }
  }

  return tool<ExecToolInput, ExecToolOutput, {}>({
    description:
      options.description ??
      `Runs a shell command (sh -c) in the sandbox "${sandbox.name}" and returns its exit code and output. ` +
        'Output past the cap is counted but not returned; the command is terminated at its timeout.',
    inputSchema: inputSchema(maxTimeout),
    execute,
  });
}
