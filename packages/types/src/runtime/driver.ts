import type { Signal } from '../options.js';
import type { StreamName } from '../schema/output-chunk.js';

/** How a command ended, as the backend reported it. */
export interface ExitStatus {
  /** 0-255, or null when a signal ended the command or no code was reported. */
  readonly exitCode: number | null;
  /** The signal's name (e.g. `SIGKILL`) when a signal ended the command, otherwise null. */
  readonly signal: string | null;
}

/** What a driver learns once its start was confirmed. */
export interface StartedProcess {
  /** The backend's process id, when it has one. */
  readonly pid?: number;
}

/**
 * The callbacks a driver reports through. Calls must follow this grammar:
 * `output* (exit | fail)`, with nothing after the terminal event.
 */
export interface DriverEvents {
  /** Bytes the command wrote, in arrival order. The runtime takes ownership of `data`. */
  output(stream: StreamName, data: Uint8Array): void;
  /**
   * The command is finished: its leader was reaped, everything it started is
   * gone or has been told to go, and every byte of output was reported.
   */
  exit(status: ExitStatus): void;
  /** The link to the backend broke; the command's fate is unknown. Terminal. */
  fail(error: Error): void;
  /**
   * Optional, before `exit`: the command itself (its leader) has ended,
   * while what it started is still being wound down or output is still
   * draining. From then on the timeout and the caller's signal no longer
   * count against the command, so a result cannot claim `timedOut` for a
   * command that had already finished.
   */
  leaderExited(status: ExitStatus): void;
}

/**
 * The backend-specific part of a Process: everything else (queueing,
 * backpressure, timeouts, teardown order, results) is the runtime's.
 *
 * A driver MUST:
 * - report output and the terminal event only through {@link DriverEvents};
 * - deliver `signal()` to the command's whole process tree where the backend
 *   can, and resolve without error once the command has already exited;
 * - reject `writeStdin()` with `StdinClosed` when the pipe is closed.
 *
 * @example
 * ```ts
 * import { StdinClosed } from '@sandstream/types';
 * import type { ProcessDriver } from '@sandstream/types/runtime';
 * // A driver for a backend whose commands print a fixed text and exit 0.
 * function echoDriver(text: string): ProcessDriver {
 *   return {
 *     async start(events) {
 *       queueMicrotask(() => {
 *         events.output('stdout', new TextEncoder().encode(text));
 *         events.exit({ exitCode: 0, signal: null });
 *       });
 *       return {};
 *     },
 *     async writeStdin() {
 *       throw new StdinClosed('this backend takes no standard input');
 *     },
 *     async closeStdin() {},
 *     async signal() {},
 *   };
 * }
 * ```
 */
export interface ProcessDriver {
  /** Starts the command. Rejects with `SpawnFailed` when it cannot start. Called once. */
  start(events: DriverEvents): Promise<StartedProcess>;
  /** Writes bytes to standard input; calls are already serialised by the runtime. */
  writeStdin(data: Uint8Array): Promise<void>;
  /** Closes standard input. Resolves when the pipe is already closed. */
  closeStdin(): Promise<void>;
  /**
   * Delivers exactly this one signal to the command's process tree. (The
   * runtime's termination sequence sends SIGCONT after SIGTERM itself.)
   */
  signal(signal: Signal): Promise<void>;
  /** Stop reading output until `resume()`: the consumer is behind. Optional. */
  pause?(): void;
  /** Read output again. Optional. */
  resume?(): void;
  /**
   * Free transport resources, standard input included. Called once, right
   * after the terminal event (exit or fail). Optional.
   */
  release?(): Promise<void>;
}
