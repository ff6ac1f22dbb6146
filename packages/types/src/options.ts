import type { OutputChunk } from './schema/output-chunk.js';

/** Signals a caller may send with `Process.kill()`. */
export const SIGNALS = Object.freeze([
  'SIGTERM',
  'SIGKILL',
  'SIGINT',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGSTOP',
  'SIGCONT',
] as const);
export type Signal = (typeof SIGNALS)[number];

/**
 * Per-command resource limits (capability `resource-limits`). Exceeding one
 * shows in the result: usually death by a signal (`SIGXCPU`, `SIGKILL`,
 * `SIGXFSZ`) or a failing exit code from the command's own error handling.
 */
export interface ResourceLimits {
  /** CPU time in whole seconds (RLIMIT_CPU). */
  readonly cpuSeconds?: number;
  /** Address-space size in bytes (RLIMIT_AS). */
  readonly addressSpaceBytes?: number;
  /** Largest file the command may write, in bytes (RLIMIT_FSIZE). */
  readonly fileSizeBytes?: number;
  /** Number of open file descriptors (RLIMIT_NOFILE). */
  readonly openFiles?: number;
}

/**
 * The size of a terminal in character cells (spec 1.5, capability `pty`):
 * whole numbers from 1 to 65535, the range of the kernel's `winsize`.
 *
 * @example
 * ```ts
 * import type { TerminalSize } from '@sandstream/types';
 * const size: TerminalSize = { cols: 120, rows: 40 };
 * ```
 */
export interface TerminalSize {
  /** Columns. */
  readonly cols: number;
  /** Rows. */
  readonly rows: number;
}

/** Options that `run()` and `stream()` share. */
export interface CommandOptions {
  /** Wall-clock limit in milliseconds, measured from the start request. On expiry the command is terminated and the result has `timedOut: true`. */
  readonly timeout?: number;
  /** Variables added to the sandbox's base environment (they override same-named ones). */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory; the sandbox's default when absent. */
  readonly cwd?: string;
  /** Aborting terminates the command and rejects with `AbortError`, which carries the partial result. */
  readonly signal?: AbortSignal;
  /** Resource limits (capability `resource-limits`). */
  readonly limits?: ResourceLimits;
  /** Account to run as (capability `user`). */
  readonly user?: string;
  /**
   * One-shot standard input (capability `stdin`): written in full, then
   * closed. A command that exits without reading it all is not an error.
   */
  readonly input?: Uint8Array | string;
  /**
   * Spec 1.5, capability `pty`: run the command on a new pseudo-terminal of
   * this size, its controlling terminal on standard input, output and
   * error. Output is the terminal's bytes as `stdout` chunks (the line
   * discipline turns `\n` into `\r\n` and echoes input); `stdin` writes
   * keystrokes (`\x03` interrupts the foreground job); `end()` types
   * end-of-file; teardown hangs the terminal up first (ADR-0052).
   */
  readonly pty?: TerminalSize;
}

/**
 * Options of `Sandbox.run()`.
 *
 * @example
 * ```ts
 * import type { RunOptions } from '@sandstream/types';
 * const options: RunOptions = {
 *   timeout: 30_000,
 *   maxOutputBytes: 1 << 20,
 *   onOutput: (chunk) => process.stdout.write(chunk.data),
 * };
 * ```
 */
export interface RunOptions extends CommandOptions {
  /** Cap on the bytes kept per stream (default 64 MiB). Past it, output is still drained and delivered to `onOutput`, not kept, and the stream's truncation flag is set. */
  readonly maxOutputBytes?: number;
  /**
   * Receives every chunk as it arrives, past the cap too, while `run()` still
   * buffers. Called synchronously in arrival order; if it throws, the command
   * is terminated and `run()` rejects with `CallbackFailed`.
   */
  readonly onOutput?: (chunk: OutputChunk) => void;
}

/**
 * Options of `Sandbox.stream()`.
 *
 * @example
 * ```ts
 * import type { StreamOptions } from '@sandstream/types';
 * const options: StreamOptions = { stdin: 'pipe', timeout: 60_000 };
 * ```
 */
export interface StreamOptions extends CommandOptions {
  /** `'pipe'` gives the Process a `stdin` writer (capability `stdin`); the default `'ignore'` gives the command an empty standard input. */
  readonly stdin?: 'pipe' | 'ignore';
  /**
   * Spec 1.2, capability `attach`: the command belongs to the sandbox, not to
   * the Process. It runs until it exits, is killed by id, or the sandbox is
   * closed; `detach()` lets it outlive this Process, `Sandbox.attach()` finds
   * it again. Not with `timeout`, `signal`, `stdin: 'pipe'` or `input`: those
   * belong to a scope a background command does not have (ADR-0036).
   */
  readonly background?: boolean;
}

/**
 * Options of `Sandbox.attach()` (spec 1.2).
 *
 * @example
 * ```ts
 * import type { AttachOptions } from '@sandstream/types';
 * const onlyWhatFollows: AttachOptions = { replay: false };
 * ```
 */
export interface AttachOptions {
  /**
   * Replay what the command wrote before the attach, as the manifest declares
   * (`replay-full`, `replay-tail`); `false` delivers only what follows.
   * Default `true`.
   */
  readonly replay?: boolean;
}

/** The default per-stream cap of `run()`: 64 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
