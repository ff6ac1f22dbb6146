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
  /**
   * The backend's own id for the command (a pid as a string, a command id),
   * known once the start is confirmed, without reading output. Without it
   * the runtime substitutes `String(pid)`, else the Process's `id`.
   */
  readonly commandId?: string;
}

/**
 * The callbacks a driver reports through. Calls must follow this grammar:
 * `output* leaderExited? output* (exit | fail)`, with nothing after the
 * terminal event. `output` may come before `start()` resolves.
 */
export interface DriverEvents {
  /** Bytes the command wrote, in arrival order. The runtime takes ownership of `data`. */
  output(stream: StreamName, data: Uint8Array): void;
  /**
   * The command is finished: its leader was reaped, nothing of its process
   * tree is alive (zombies count as gone), and every byte of output was
   * reported. Nothing of the command may outlive this report.
   */
  exit(status: ExitStatus): void;
  /** The link to the backend broke; the command's fate is unknown. Terminal. */
  fail(error: Error): void;
  /**
   * Optional, before `exit`: the command's leader has ended, while what it
   * started may still be alive or output is still draining. The runtime
   * then winds the tree down on its own timers (SIGTERM and SIGCONT at
   * once, SIGKILL after the grace period, through {@link ProcessDriver.signal})
   * until `exit` comes, and from then on the timeout and the caller's signal
   * no longer count against the command, so a result cannot claim
   * `timedOut` for a command that had already finished. A driver that knows
   * the tree is gone when the leader ends reports `exit` alone.
   */
  leaderExited(status: ExitStatus): void;
}

/**
 * The backend-specific part of a Process: everything else (queueing,
 * backpressure, timeouts, grace periods, teardown order, results) is the
 * runtime's.
 *
 * A driver MUST:
 * - report output and the terminal event only through {@link DriverEvents};
 * - deliver `signal()` to the command's whole process tree where the backend
 *   can, and resolve without error once the command has already exited;
 * - reject `writeStdin()` with `StdinClosed` when the pipe is known closed,
 *   and with `TransportError` when the delivery of the bytes is uncertain;
 * - reject `start()` with `TransportError` when the start's outcome is
 *   unknown, and never retry a start that may have run.
 *
 * Lifecycle, as the runtime drives it (spec 1.2 §15, ADR-0041; its grace
 * periods, ADR-0014):
 * - `start()` is called once. `output()` may be reported before it
 *   resolves. `signal()`, `writeStdin()`, `closeStdin()`, `pause()` and
 *   `resume()` are never called before `start()` resolved.
 * - `release()` is called exactly once whenever `start()` was called: after
 *   the terminal event, after a rejected `start()`, and after the runtime
 *   gave up with its own `TransportError` (then possibly while `start()` is
 *   still pending: the driver abandons the start and ends what it may have
 *   started, if it can). It is the last call the runtime makes, and the
 *   sandbox's `close()` waits for it to end (for at most the kill wait).
 * - `exit(status)` means the leader was reaped, nothing of its process
 *   tree is alive (zombies count as gone), and every byte of output was
 *   reported.
 * - The runtime owns every grace period; a driver is never told one. When
 *   a driver reports `leaderExited(status)`, the runtime sends SIGTERM (then
 *   SIGCONT) to the tree through `signal()` at once, SIGKILL after the grace
 *   period, and settles with `TransportError` when no `exit` comes within
 *   the kill wait after SIGKILL. Teardown (dispose, timeout, abort) runs the
 *   same sequence.
 * - `signal(sig)` delivers exactly that signal to the whole tree, and
 *   resolves without error when the tree is already gone.
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
  /**
   * Starts the command. Rejects with `SpawnFailed` when it cannot start, and
   * with `TransportError` when whether it started is unknown. Called once,
   * never retried.
   */
  start(events: DriverEvents): Promise<StartedProcess>;
  /**
   * Writes bytes to standard input; calls are already serialised by the
   * runtime. Resolves once the backend accepted them. Rejects with
   * `StdinClosed` when the pipe is known closed, and with `TransportError`
   * when whether the bytes arrived is uncertain (the runtime then sends no
   * further writes).
   */
  writeStdin(data: Uint8Array): Promise<void>;
  /** Closes standard input. Resolves when the pipe is already closed. */
  closeStdin(): Promise<void>;
  /**
   * Delivers exactly this one signal to the command's process tree, and
   * resolves without error when the tree is already gone. (The runtime's
   * termination sequence sends SIGCONT after SIGTERM itself.)
   */
  signal(signal: Signal): Promise<void>;
  /**
   * Spec 1.5, for a command started with `pty`: sets the terminal's size,
   * after which the kernel sends SIGWINCH to its foreground group; resolves
   * once the size is set. Called in order, never concurrently, and only
   * after `start()` resolved. Rejects with `TransportError` when whether
   * the size was set is unknown. Required of a driver whose backend
   * declares `pty`.
   */
  resize?(cols: number, rows: number): Promise<void>;
  /** Stop reading output until `resume()`: the consumer is behind. Optional. */
  pause?(): void;
  /** Read output again. Optional. */
  resume?(): void;
  /**
   * Free transport resources, standard input included. Called exactly once
   * whenever `start()` was called, as the runtime's last call on the
   * driver: after the terminal event, a rejected start, or the runtime's own
   * `TransportError`. Optional.
   */
  release?(): Promise<void>;
}
