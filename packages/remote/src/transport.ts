/**
 * What a backend implements for the remote driver (ADR-0033): start one
 * process with argv, deliver its bytes and its end, signal it where the
 * backend can, write its standard input, and run short helper commands.
 * Everything else (the supervisor, reports, signals to the tree, at-most-once
 * start, retries, release and the sweep by tag) is the driver's.
 *
 * The interface fits envd (E2B), Vercel Sandbox and Docker `exec` alike:
 *
 * | | envd | Vercel | Docker exec |
 * |---|---|---|---|
 * | {@link RemoteTransport.start} | one `Start` stream | a detached command + its log stream | exec create + start |
 * | {@link TransportProcess.signal} | `SendSignal`, TERM and KILL | `kill(signal)` | none (omit it) |
 * | {@link TransportEnd} `exit` | exact status | one number | one number |
 * | {@link RemoteTransport.run} | a `Start` of argv | `runCommand` | an exec |
 * | {@link StartRequest.pty} (spec 1.5) | `Start` with `pty` | none | exec create with `Tty`, `ConsoleSize` |
 * | {@link TransportProcess.resize} | `Update` | none | `POST /exec/{id}/resize` |
 */
import type { StreamName } from '@sandstream/types';
import type { ExitStatus } from '@sandstream/types/runtime';
import type { SupervisorReport } from './reports.js';

/** One process to start: exactly these words, never through a shell of the backend's. */
export interface StartRequest {
  /** argv; argv[0] is a path (the driver passes the supervisor's shell). */
  readonly argv: readonly string[];
  /** The process's environment on top of the backend's own (the backend's PATH, HOME... stay). */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory; undefined: the backend's default. */
  readonly cwd: string | undefined;
  /** The sandbox account to run as; undefined: the backend's default. */
  readonly user: string | undefined;
  /** Whether the process gets a standard input pipe; false: it reads end-of-file at once. */
  readonly stdin: boolean;
  /**
   * The command's id, unique per start: a backend with a tag or label of its
   * own may attach it (envd's `tag`); the driver finds the process by the
   * environment regardless.
   */
  readonly id: string;
  /**
   * Spec 1.5 (ADR-0052), only where the transport declares {@link RemoteTransport.pty}: start the
   * process on a new pseudo-terminal of this size, as the leader of its session with the
   * terminal as controlling terminal and as standard input, output and error. The terminal's
   * bytes are then all `stdout` output (never `stderr`), {@link TransportProcess.writeStdin}
   * writes terminal input, and {@link TransportProcess.resize} sets its size.
   */
  readonly pty?: { readonly cols: number; readonly rows: number } | undefined;
}

/**
 * How the transport's side of a process ended. Reported once, last.
 *
 * - `exit`: the backend reported the process's end and every byte of its
 *   output was delivered before it. `status` is the end decoded where the
 *   backend gives one (envd: `exit status 3`, `signal: killed`), else
 *   undefined.
 * - `refused`: the backend answered that it will not start the process (a
 *   working directory that does not exist, an unknown account): nothing
 *   ran. Only before any output.
 * - `broken`: the link failed; whether the process runs is unknown.
 *   `sent: false` when the request provably never left this host (its
 *   connection could not be opened), so nothing can have started.
 */
export type TransportEnd =
  | { readonly kind: 'exit'; readonly status: ExitStatus | undefined }
  | { readonly kind: 'refused'; readonly reason: string; readonly error?: unknown }
  | { readonly kind: 'broken'; readonly error: unknown; readonly sent: boolean };

/** What the transport reports a started process through. Calls: `output* end`, nothing after `end`. */
export interface TransportSink {
  /** Bytes of the process's standard output or error, in arrival order per stream. */
  output(stream: StreamName, data: Uint8Array): void;
  /** The end (see {@link TransportEnd}). */
  end(end: TransportEnd): void;
}

/** A process the transport started. */
export interface TransportProcess {
  /**
   * Delivers a signal to the started process itself (the supervisor, which
   * forwards it to the tree). Present only where the backend can signal
   * it; {@link RemoteTransport.signals} says which signals. Resolves
   * without error when the process is already gone.
   */
  signal?(signal: string): Promise<void>;
  /**
   * Writes bytes to the process's standard input, never resending them.
   * Rejects with `StdinClosed` when the backend answered that the pipe is
   * closed, with `TransportError` when whether the bytes arrived is
   * uncertain.
   */
  writeStdin(data: Uint8Array): Promise<void>;
  /**
   * Closes standard input; resolves when it is already closed or the process is gone. Must be
   * idempotent: the driver repeats a close that rejected with `TransportError` (the link failed)
   * within its retry policy, while the command runs. On a terminal ({@link StartRequest.pty}) it
   * never closes the terminal's input, which is the command's output too: the runtime types
   * end-of-file (0x04) through {@link TransportProcess.writeStdin} instead, and the driver does
   * not call it.
   */
  closeStdin(): Promise<void>;
  /**
   * Spec 1.5: sets the size of the process's terminal ({@link StartRequest.pty}); resolves once the
   * backend confirmed it. Rejects with `StdinClosed` when the process is gone, with
   * `TransportError` when the outcome is unknown. Present where {@link RemoteTransport.pty} is.
   */
  resize?(cols: number, rows: number): Promise<void>;
  /** Stop reading output until `resume()` (the consumer is behind). Optional. */
  pause?(): void;
  resume?(): void;
  /**
   * Told each report of the supervisor as the driver reads it (the frame grammar is
   * `reports.ts`'s alone). For a transport whose end depends on whether the command's end was
   * reported: Docker's exec inspect cannot tell a supervisor killed by a signal from one that
   * died of its command's signal on purpose. Optional.
   */
  reported?(report: SupervisorReport): void;
  /** Stop listening and free what the process holds on this host; no event follows. Never throws. */
  close(): void;
}

/** A helper command's outcome. */
export interface HelperResult {
  /** Its exit code, or null when it died of a signal. */
  readonly exitCode: number | null;
}

/** What {@link RemoteTransport.run} takes besides argv. */
export interface HelperOptions {
  /** The account to run as (the command's, so its processes can be read and signalled). */
  readonly user: string | undefined;
  /** Bound on the whole request, in ms; past it the call rejects. */
  readonly timeoutMs: number;
}

/**
 * A backend, as the remote driver sees it.
 *
 * @example
 * ```ts
 * import { spawn } from 'node:child_process';
 * import type { RemoteTransport } from '@sandstream/remote';
 *
 * // Local processes standing in for a sandbox (the package's tests use a transport like this).
 * const local: RemoteTransport = {
 *   signals: new Set(['SIGTERM', 'SIGINT', 'SIGHUP']),
 *   start(request, sink) {
 *     const [file, ...args] = request.argv;
 *     const child = spawn(file!, args, { env: { ...process.env, ...request.env }, cwd: request.cwd, stdio: [request.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
 *     child.stdout!.on('data', (chunk: Buffer) => sink.output('stdout', chunk));
 *     child.stderr!.on('data', (chunk: Buffer) => sink.output('stderr', chunk));
 *     child.on('error', (error) => sink.end({ kind: 'refused', reason: error.message, error }));
 *     child.on('close', (code, signal) => sink.end({ kind: 'exit', status: { exitCode: code, signal } }));
 *     return {
 *       async signal(name) { child.kill(name as NodeJS.Signals); },
 *       async writeStdin(data) { child.stdin?.write(data); },
 *       async closeStdin() { child.stdin?.end(); },
 *       close() { child.stdout!.destroy(); child.stderr!.destroy(); },
 *     };
 *   },
 *   run(argv) {
 *     return new Promise((resolve) => spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' }).on('close', (exitCode) => resolve({ exitCode })));
 *   },
 * };
 * ```
 */
export interface RemoteTransport {
  /** The signals {@link TransportProcess.signal} can deliver (`SIGTERM`...); empty or absent: none. */
  readonly signals?: ReadonlySet<string>;
  /**
   * Spec 1.5: whether {@link RemoteTransport.start} can start a process on a terminal
   * ({@link StartRequest.pty}), whose processes then have {@link TransportProcess.resize}.
   * Absent: it cannot, and the driver refuses a command with `pty`.
   */
  readonly pty?: boolean;
  /**
   * Starts the process. Exactly once per call, never retried by the
   * transport: a start whose outcome is unknown is a `broken` end. Events
   * may come before this returns only through `sink`.
   */
  start(request: StartRequest, sink: TransportSink): TransportProcess;
  /**
   * Runs a short helper command to its end (a signal to a group, a sweep by
   * tag) and gives its exit. Rejects when the request failed or the bound
   * passed; helpers are idempotent, so the driver may repeat them.
   */
  run(argv: readonly string[], options: HelperOptions): Promise<HelperResult>;
}
