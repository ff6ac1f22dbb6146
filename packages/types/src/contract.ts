import type { AttachOptions, RunOptions, Signal, StreamOptions, TerminalSize } from './options.js';
import type { CapabilityManifest } from './schema/capability.js';
import type { ExecResult } from './schema/exec-result.js';
import type { OutputChunk, StreamName } from './schema/output-chunk.js';

/**
 * The writer a Process exposes when started with `stdin: 'pipe'`.
 * Writes are delivered in call order. After `end()`, or once the command has
 * exited or stopped reading, `write()` rejects with `StdinClosed`.
 */
export interface StdinWriter {
  /**
   * Queues bytes (strings are UTF-8 encoded); resolves once the backend
   * accepted them. Bytes are delivered exactly once, in order: a write whose
   * delivery is uncertain rejects with `TransportError`, and so does every
   * later write; `end()` still closes standard input.
   */
  write(data: Uint8Array | string): Promise<void>;
  /** Closes standard input so the command sees end-of-file. Idempotent; never rejects because the command already exited. */
  end(): Promise<void>;
  /** True once `end()` was called or the pipe was found closed. */
  readonly closed: boolean;
}

/**
 * A running command, returned synchronously by `Sandbox.stream()`.
 *
 * It is an async iterable of tagged chunks and an async disposable. Leaving
 * its scope terminates the command and everything it started, however the
 * scope is left (ADR-0003):
 *
 * @example
 * ```ts
 * import type { Sandbox } from '@sandstream/types';
 * async function test(sb: Sandbox): Promise<number | null> {
 *   await using proc = sb.stream(['npm', 'test'], { timeout: 300_000 });
 *   for await (const chunk of proc) {
 *     (chunk.stream === 'stdout' ? process.stdout : process.stderr).write(chunk.data);
 *   }
 *   const result = await proc.wait();
 *   return result.exitCode;
 * }
 * ```
 */
export interface Process extends AsyncIterable<OutputChunk>, AsyncDisposable {
  /** Identifies this process within its sandbox; stable and unique. */
  readonly id: string;
  /** The command as it was validated. */
  readonly argv: readonly string[];
  /** The backend's process id once the start was confirmed, otherwise undefined. */
  readonly pid: number | undefined;
  /**
   * The backend's id for the command (or a substitute: the pid as a string,
   * else `id`), set once the start was confirmed, without reading output;
   * stable for the Process's life. Undefined until then.
   */
  readonly commandId: string | undefined;
  /** The writer when started with `stdin: 'pipe'`, otherwise null. */
  readonly stdin: StdinWriter | null;
  /** True once the command's exit (or failure) is known. */
  readonly exited: boolean;
  /**
   * Iterates the chunks in arrival order. A Process can be iterated once.
   * Leaving the loop early (break, return, throw) terminates the command.
   */
  [Symbol.asyncIterator](): AsyncIterator<OutputChunk, undefined>;
  /**
   * Resolves once the backend confirmed the start (`pid` and `commandId` are
   * then set). Rejects as `wait()` would when the command never started. A
   * start is never retried: when its outcome is unknown, this rejects with
   * `TransportError`.
   */
  started(): Promise<void>;
  /**
   * Resolves with the terminal result (`streamed: true`). Idempotent. A loop
   * that is iterating keeps receiving every chunk to the end; output no
   * iterator will read is drained and discarded. Rejects with `AbortError` when
   * the caller's signal ended the command, `SpawnFailed` when it never started,
   * or `TransportError` when the backend could not report how it ended.
   */
  wait(): Promise<ExecResult>;
  /** Sends a signal to the command's process tree. A no-op once it exited. */
  kill(signal?: Signal): Promise<void>;
  /**
   * Spec 1.5, for a command started with `pty`: sets its terminal's size,
   * after which its foreground process group receives SIGWINCH. Resolves
   * once the size is set; resizes take effect in call order. Rejects with
   * `InvalidArgument` (`cols` or `rows`, whole numbers from 1 to 65535),
   * with `InvalidState` on a Process without a terminal or once it
   * settled, and with `TransportError` when a remote backend did not
   * confirm it (the command runs on). Absent on implementations of
   * earlier revisions.
   *
   * @example
   * ```ts
   * import type { Sandbox } from '@sandstream/types';
   * async function top(sb: Sandbox): Promise<void> {
   *   await using proc = sb.stream(['top'], { pty: { cols: 80, rows: 24 }, stdin: 'pipe' });
   *   await proc.resize?.(120, 40);
   *   await proc.stdin?.write('q');
   *   await proc.wait();
   * }
   * ```
   */
  resize?(cols: number, rows: number): Promise<void>;
  /** Terminates the command if it is still running (SIGTERM, then SIGKILL after the grace period) and waits for it. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A Process of a background command (spec 1.2, capability `attach`): the one
 * `stream(argv, { background: true })` returns, or one `Sandbox.attach()`
 * gives. Leaving its scope terminates the command, as for any Process, unless
 * `detach()` was called first (ADR-0036).
 *
 * @example
 * ```ts
 * import type { Sandbox } from '@sandstream/types';
 * async function startServer(sb: Sandbox): Promise<string> {
 *   const server = sb.stream(['node', 'server.js'], { background: true });
 *   await server.started();
 *   await server.detach(); // it runs on; close() of the sandbox ends it
 *   return server.commandId!;
 * }
 * ```
 */
export interface BackgroundProcess extends Process {
  /**
   * Per stream, how many bytes the command wrote before the first one this
   * Process delivers: 0 for the Process that started it and under
   * `replay-full`; undefined where the adapter does not count them (a
   * follow-only attach). Set once `attach()` resolved.
   */
  readonly skipped: Readonly<Record<StreamName, number>> | undefined;
  /**
   * Leaves the command running, owned by its sandbox as before, and releases
   * this Process: unread output is discarded, iteration ends, `wait()` and
   * `kill()` reject with `InvalidState`, disposal resolves at once. Waits for
   * `started()` and rejects as it does. On a Process already settled it only
   * releases it: the ended command stays listed, and `attach()` gives its
   * result.
   */
  detach(): Promise<void>;
}

/** A background command a sandbox knows (spec 1.2, `Sandbox.commands()`). */
export interface CommandInfo {
  /** The id `attach()` takes. */
  readonly commandId: string;
  /** The command as it was started. */
  readonly argv: readonly string[];
  /** Whether it still runs; an ended command stays listed until it is forgotten or its owner closes. */
  readonly state: 'running' | 'ended';
  /**
   * Spec 1.5: for a command on a terminal, the size last set, so that a
   * handle attaching from elsewhere knows the geometry its output was
   * written for. Absent for a command on pipes.
   */
  readonly terminal?: TerminalSize;
}

/** How a sandbox terminates a command (spec 1.1, SS-TERM-1). */
export interface SandboxTermination {
  /** Milliseconds between SIGTERM and SIGKILL. */
  readonly graceMs: number;
  /** Milliseconds it waits for the exit after SIGKILL before failing with `TransportError`. */
  readonly killWaitMs: number;
  /**
   * Spec 1.4 (SS-OWNER-1): the bound, in milliseconds, within which a
   * foreground command's whole tree is gone once its owner is lost (the
   * owner process ended without disposing of it, or its link to the
   * environment broke for good), grace period included. Absent: the
   * sandbox makes no such promise (a 1.3 adapter).
   */
  readonly ownerLossMs?: number;
}

/**
 * A place that runs commands. Obtain one from an adapter; dispose it to
 * terminate everything it started.
 *
 * @example
 * ```ts
 * import type { Sandbox } from '@sandstream/types';
 * async function version(sb: Sandbox): Promise<string> {
 *   const result = await sb.run(['node', '--version'], { timeout: 10_000 });
 *   return result.stdoutText.trim();
 * }
 * ```
 */
export interface Sandbox<Native = unknown> extends AsyncDisposable {
  /** The adapter's name, as reports print it. */
  readonly name: string;
  /** What this sandbox supports. Constant for the sandbox's lifetime. */
  readonly capabilities: Readonly<CapabilityManifest>;
  /** The backend's own handle, for what the contract does not cover. */
  readonly native: Native;
  /**
   * The sandbox's termination settings: `graceMs` between SIGTERM and
   * SIGKILL, and `killWaitMs` it waits for an exit after SIGKILL before
   * failing with `TransportError`. Sandboxes built with `defineSandbox`
   * always state them.
   */
  readonly termination?: SandboxTermination;
  /** Runs a command to completion and buffers its output. */
  run(argv: readonly string[], options?: RunOptions): Promise<ExecResult>;
  /**
   * Starts a command and returns its Process synchronously. The Process is
   * not thenable, so forgetting the scope cannot be papered over by `await`.
   * Throws `CapabilityNotSupported`, `InvalidArgument` or `SandboxClosed`
   * before any side effect.
   *
   * With `background: true` (spec 1.2, capability `attach`), the command
   * belongs to the sandbox and the Process is a {@link BackgroundProcess}
   * that can `detach()`.
   */
  stream(argv: readonly string[], options: StreamOptions & { readonly background: true }): BackgroundProcess;
  /**
   * Starts a command and returns its Process synchronously (see the
   * overload above; this one is every call without `background: true`).
   */
  stream(argv: readonly string[], options?: StreamOptions): Process;
  /**
   * Spec 1.2, capability `attach`: a Process for a background command that
   * this or, with `attach-reconnect`, another handle of the same environment
   * started, running or ended. An unknown id rejects with `CommandNotFound`
   * before any side effect. Disposing the Process terminates the command (an
   * ended one is forgotten) unless it was detached.
   */
  attach?(commandId: string, options?: AttachOptions): Promise<BackgroundProcess>;
  /** Spec 1.2, capability `attach`: the background commands this sandbox can attach to. */
  commands?(): Promise<readonly CommandInfo[]>;
  /** Terminates every process this sandbox started, background commands included, then releases it. Idempotent. */
  close(): Promise<void>;
  /** Same as `close()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** A factory that returns a fresh, isolated sandbox on every call. */
export type SandboxFactory = () => Promise<Sandbox> | Sandbox;
