import { SpawnFailed, TransportError } from '../errors.js';
import type { Signal } from '../options.js';
import { createExecResult } from '../result.js';
import type { ExecResult } from '../schema/exec-result.js';
import type { OutputChunk, StreamName } from '../schema/output-chunk.js';
import { onAbortOf } from './abort-fan-out.js';
import { withArgvHint } from './argv-hint.js';
import { Capture } from './capture.js';
import { ChunkQueue } from './chunk-queue.js';
import type { DriverEvents, ExitStatus, ProcessDriver } from './driver.js';
import { endingError, type Ending } from './ending.js';
import type { ExecutionPlan } from './execution-plan.js';
import { StdinChannel } from './stdin-channel.js';
import { noTerminal, TerminalResizer } from './terminal-resize.js';
import { runTermination, signalOnce, type TerminationTarget } from './termination-sequence.js';
import { longTimeout, TIMED_OUT, within, type Timer } from './timers.js';
import { asTransport } from './transport.js';

/** Timing and flow-control settings of one process. */
export interface CoreSettings {
  /** Time between SIGTERM and SIGKILL during teardown. */
  readonly graceMs: number;
  /** How long to wait for the exit report after SIGKILL before declaring the transport broken. */
  readonly killWaitMs: number;
  /** Queued bytes at which the driver is paused while nobody reads. */
  readonly highWaterMark: number;
}

/**
 * `stream`: chunks are queued for the iterator (result has `streamed: true`).
 * `run`: chunks are accumulated up to the cap (result has `streamed: false`).
 */
export type CoreMode = 'stream' | 'run';

/** `starting` until the driver confirmed the start, `settled` once the command's fate is known. */
type Phase = 'starting' | 'running' | 'settled';

/**
 * The Process state machine, written once for every adapter. It connects
 * the driver's events to the chunk queue (stream) or the captures (run),
 * arms the timeout and the caller's signal, and reports the result; the
 * driver owns only the backend.
 *
 * It holds no reference to the public Process object, so that object can
 * be garbage-collected (and the leak caught) while the core lives on.
 */
export class ProcessCore implements TerminationTarget {
  readonly startedAt = performance.now();
  pid: number | undefined;
  commandId: string | undefined;

  private phase: Phase = 'starting';
  private readonly settledPromise: Promise<void>;
  private resolveSettled!: () => void;
  private status: ExitStatus | undefined;
  private endedAt = 0;
  /** Why the command ended, unless it ended by itself; see {@link Ending}. */
  private ending: Ending | undefined;
  /** What the leader's exit reported, once the driver said the leader ended. */
  leaderStatus: ExitStatus | undefined;

  /** Stream mode: the unread chunks. */
  private readonly queue: ChunkQueue | undefined;
  /** Run mode: what is kept of each stream. */
  private readonly captures: Record<StreamName, Capture> | undefined;
  /** The caller's `onOutput`, until it throws: then it is not called again. */
  private onOutput: ((chunk: OutputChunk) => void) | undefined;
  readonly stdin: StdinChannel;
  /** The command's terminal (spec 1.5), or undefined on pipes. */
  readonly terminal: TerminalResizer | undefined;

  private termination: Promise<void> | undefined;
  private timeoutTimer: Timer | undefined;
  private unsubscribeAbort: (() => void) | undefined;
  private resultPromise: Promise<ExecResult> | undefined;
  /** Leaving the scope: termination, then the driver's release. */
  private disposal: Promise<void> | undefined;
  /** The driver's `release()`, once called (it is called exactly once, once settled). */
  private driverRelease: Promise<void> | undefined;
  /** Settles when `driver.start()` did (either way); undefined when it was never called. */
  private readonly startAttempt: Promise<void> | undefined;
  /** The public `started()`: resolves once the start was confirmed. */
  private readonly startConfirmed: Promise<void>;
  private confirmStart!: () => void;
  private refuseStart!: (error: Error) => void;

  constructor(
    readonly id: string,
    readonly plan: ExecutionPlan,
    readonly driver: ProcessDriver,
    readonly mode: CoreMode,
    readonly settings: CoreSettings,
  ) {
    this.settledPromise = new Promise((resolve) => {
      this.resolveSettled = resolve;
    });
    this.startConfirmed = new Promise<void>((resolve, reject) => {
      this.confirmStart = resolve;
      this.refuseStart = reject;
    });
    // Rejections reach whoever calls started(); nobody calling it is no error.
    this.startConfirmed.catch(() => undefined);
    this.onOutput = plan.onOutput;
    this.captures =
      mode === 'run'
        ? { stdout: new Capture(plan.maxOutputBytes), stderr: new Capture(plan.maxOutputBytes) }
        : undefined;
    this.queue =
      mode === 'stream'
        ? new ChunkQueue(settings.highWaterMark, { pause: () => this.applyFlow(), resume: () => this.applyFlow() })
        : undefined;
    this.stdin = new StdinChannel(driver, this, plan.command.pty !== undefined);
    this.terminal = plan.command.pty === undefined ? undefined : new TerminalResizer(this, plan.command.pty);

    if (plan.signal?.aborted) {
      // Already aborted: nothing starts, nothing to tear down or report, as run() refuses it.
      this.ending = { kind: 'aborted', reason: plan.signal.reason, started: false };
      this.startAttempt = undefined;
      this.settle(undefined, undefined);
      return;
    }
    if (plan.timeout !== undefined) {
      this.timeoutTimer = longTimeout(() => this.endBecause({ kind: 'timed-out' }), plan.timeout);
    }
    if (plan.signal !== undefined) {
      const signal = plan.signal;
      this.unsubscribeAbort = onAbortOf(signal, () =>
        this.endBecause({ kind: 'aborted', reason: signal.reason, started: true }),
      );
    }
    const events: DriverEvents = {
      output: (stream, data) => this.handleOutput(stream, data),
      exit: (status) => this.settle(status, undefined),
      leaderExited: (status) => this.handleLeaderExit(status),
      fail: (error) => this.settle(undefined, asTransport(error, 'the backend')),
    };
    this.startAttempt = this.start(events);
  }

  private async start(events: DriverEvents): Promise<void> {
    try {
      // Called once: a start whose outcome is unknown is never retried.
      const info = await this.driver.start(events);
      this.pid = info.pid;
      this.commandId = info.commandId ?? (info.pid !== undefined ? String(info.pid) : this.id);
      if (this.phase === 'starting') this.phase = 'running';
      this.confirmStart();
    } catch (error) {
      this.settle(undefined, asTransport(withArgvHint(error, this.plan.command.argv), 'start', [SpawnFailed]));
      return;
    }
    // Settled meanwhile (the runtime gave up, or the exit came first): nothing more is sent.
    if (this.phase !== 'running') return;
    // Output may have filled the queue before the start was confirmed.
    if (this.queue?.paused) this.driver.pause?.();
    // In the background: `started` is not "read its input" (a non-reader would block teardown).
    if (this.plan.input !== undefined) void this.feedInput(this.plan.input);
    // A terminal nobody writes to gets end-of-file at once, as an ignored pipe gives it (T3).
    else if (this.plan.command.pty !== undefined && !this.plan.interactive) void this.feedInput(new Uint8Array(0));
  }

  private async feedInput(input: Uint8Array): Promise<void> {
    const failure = await this.stdin.feedOnce(input);
    if (failure === undefined || this.phase === 'settled') return;
    // The link broke: the result cannot be trusted; it ends with the failure once it is gone.
    if (this.ending?.kind !== 'failed') this.ending = { kind: 'failed', error: failure };
    void this.terminate();
  }

  get settled(): boolean {
    return this.phase === 'settled';
  }

  /** Resolves once the command's fate is known (exit or failure). Never rejects. */
  whenSettled(): Promise<void> {
    return this.settledPromise;
  }

  /** Resolves once settled and the driver's `release()` ended (at once when it is never called). Never rejects. */
  whenReleased(): Promise<void> {
    return this.settledPromise.then(() => this.driverRelease);
  }

  /** Resolves once the start was confirmed or the command's fate is known. Never rejects. */
  whenStartedOrSettled(): Promise<void> {
    return Promise.race([this.startAttempt ?? this.settledPromise, this.settledPromise]);
  }

  /** Resolves once the backend confirmed the start; rejects as `result()` does when it never started. */
  started(): Promise<void> {
    return this.startConfirmed;
  }

  // ---- output ---------------------------------------------------------

  private handleOutput(stream: StreamName, data: Uint8Array): void {
    if (this.phase === 'settled' || data.byteLength === 0) return;
    const chunk: OutputChunk = { stream, data };
    if (this.onOutput !== undefined) {
      try {
        this.onOutput(chunk);
      } catch (error) {
        this.onOutput = undefined;
        this.endBecause({ kind: 'callback-failed', error });
      }
    }
    if (this.captures !== undefined) this.captures[stream].add(data);
    else this.queue!.push(chunk);
  }

  /** Passes the queue's pause state on to the driver, never before its start was confirmed nor after the end. */
  private applyFlow(): void {
    if (this.phase !== 'running' || this.queue === undefined) return;
    if (this.queue.paused) this.driver.pause?.();
    else this.driver.resume?.();
  }

  /** True while the driver is paused because the reader is behind. */
  get paused(): boolean {
    return this.queue?.paused ?? false;
  }

  /** Resolves the next time a paused driver is resumed. */
  whenResumed(): Promise<void> {
    return this.queue?.whenResumed() ?? new Promise<void>(() => undefined);
  }

  /** Drops unread output and stops queueing: nobody will read it. */
  discard(): void {
    this.queue?.discard();
  }

  /** An iterator was created: `wait()` leaves the output to its loop. */
  attachReader(): void {
    this.queue?.attachReader();
  }

  /** Pulls the next chunk for the iterator. */
  next(): Promise<IteratorResult<OutputChunk, undefined>> {
    const queue = this.queue!;
    const chunk = queue.shift();
    if (chunk !== undefined) return Promise.resolve({ value: chunk, done: false });
    if (this.phase === 'settled' || queue.discarding) {
      return this.settledPromise.then(() => {
        const error = this.terminalError(true);
        if (error !== undefined) throw error;
        return { value: undefined, done: true };
      });
    }
    // After an abort too, output keeps coming (a SIGTERM handler's, say) until the command is
    // gone; settle() then ends the loop with the AbortError.
    return queue.nextPushed();
  }

  // ---- ending ---------------------------------------------------------

  /** The runtime ends the command for this reason (the first reason wins). */
  private endBecause(ending: Ending): void {
    if (this.phase === 'settled') return;
    this.ending ??= ending;
    void this.terminate();
  }

  /**
   * The leader has ended while what it started may live on: its timeout and
   * the caller's signal no longer count against it, and the rest of its
   * tree is wound down on the runtime's own timers (SIGTERM, SIGCONT,
   * SIGKILL after the grace period) until the driver reports the exit.
   */
  private handleLeaderExit(status: ExitStatus): void {
    if (this.phase === 'settled' || this.leaderStatus !== undefined) return;
    this.leaderStatus = status;
    this.disarm();
    void this.terminate();
  }

  /** The timeout and the caller's signal no longer count against the command. */
  private disarm(): void {
    this.timeoutTimer?.cancel();
    this.unsubscribeAbort?.();
    this.unsubscribeAbort = undefined;
  }

  private settle(status: ExitStatus | undefined, failure: Error | undefined): void {
    if (this.phase === 'settled') return;
    const startConfirmed = this.phase === 'running';
    this.phase = 'settled';
    this.endedAt = performance.now();
    this.status = status;
    if (failure !== undefined && this.ending?.kind !== 'failed') this.ending = { kind: 'failed', error: failure };
    this.disarm();
    this.resolveSettled();
    // The last call on the driver, exactly once whenever start() was called:
    // after its terminal event, its rejected start, or the runtime's own
    // TransportError. It frees the transport (standard input included) now,
    // not only when someone disposes.
    if (this.ending?.kind !== 'aborted' || this.ending.started) {
      this.driverRelease = Promise.resolve()
        .then(() => this.driver.release?.())
        .catch(() => undefined);
    }
    this.queue?.end(this.terminalError(true));
    if (!startConfirmed && status === undefined) {
      this.refuseStart(this.terminalError(this.mode === 'stream') ?? new TransportError('the command never started'));
    }
  }

  /** The runtime gives up on the command: its fate is unknown. */
  failTransport(error: Error): void {
    this.settle(undefined, asTransport(error, 'the backend'));
  }

  /** The error the command ended with, if any, for iteration (`streamed`) or run. */
  private terminalError(streamed: boolean): Error | undefined {
    return endingError(this.ending, () => this.buildResult(streamed));
  }

  private buildResult(streamed: boolean): ExecResult {
    const stdout = this.captures?.stdout;
    const stderr = this.captures?.stderr;
    return createExecResult({
      exitCode: this.status?.exitCode ?? null,
      signal: this.status?.signal ?? null,
      streamed,
      stdout: streamed ? undefined : stdout?.bytes(),
      stderr: streamed ? undefined : stderr?.bytes(),
      stdoutTruncated: stdout?.truncated ?? false,
      stderrTruncated: stderr?.truncated ?? false,
      timedOut: this.ending?.kind === 'timed-out',
      durationMs: Math.max(0, this.endedAt - this.startedAt),
    });
  }

  /**
   * The terminal result. Idempotent. In stream mode, output that no
   * iterator will read is drained and discarded, while a loop that is
   * reading keeps receiving every chunk to the end ({@link ChunkQueue}).
   */
  result(): Promise<ExecResult> {
    if (this.resultPromise === undefined) {
      this.queue?.resultRequested();
      this.resultPromise = this.settledPromise.then(() => {
        const streamed = this.mode === 'stream';
        const error = this.terminalError(streamed);
        if (error !== undefined) throw error;
        return this.buildResult(streamed);
      });
    }
    return this.resultPromise;
  }

  /** Sends a signal to the process tree; a no-op once settled. */
  kill(signal: Signal): Promise<void> {
    return signalOnce(this, signal);
  }

  /** Sets the terminal's size (spec 1.5); refused on pipes. */
  resize(cols: unknown, rows: unknown): Promise<void> {
    return this.terminal === undefined ? noTerminal() : this.terminal.resize(cols, rows);
  }

  /** Teardown hangs a terminal up first (ADR-0052, T5). */
  get hangsUp(): boolean {
    return this.terminal !== undefined;
  }

  /**
   * SIGTERM, then SIGKILL after the grace period, then a bounded wait for
   * the exit report (see {@link runTermination}). Idempotent.
   */
  terminate(): Promise<void> {
    if (this.termination === undefined) {
      // Output still flows during teardown (up to its mark): a child blocked on a full pipe can act on SIGTERM.
      this.queue?.allowTeardownSlack();
      this.termination = runTermination(this);
    }
    return this.termination;
  }

  /** Waits up to `ms` for the start to be confirmed (or to fail); true when it was. */
  async startedWithin(ms: number): Promise<boolean> {
    return (await within(this.startAttempt ?? Promise.resolve(), ms)) !== TIMED_OUT;
  }

  /** Waits up to `ms` for the exit report; true when it came. */
  async settlesWithin(ms: number): Promise<boolean> {
    return (await within(this.settledPromise, ms)) !== TIMED_OUT;
  }

  /**
   * Leaves the scope: discards unread output, terminates the command if it
   * is still running, and waits until the driver was released (which
   * closes standard input).
   * Rejects only when termination could not be confirmed.
   */
  dispose(): Promise<void> {
    this.disposal ??= this.runDispose();
    return this.disposal;
  }

  private async runDispose(): Promise<void> {
    this.discard();
    await this.terminate();
    // Released once settled (a failure to free the transport changes nothing
    // for the caller, and a release that hangs does not hold the scope).
    await within(this.driverRelease ?? Promise.resolve(), this.settings.killWaitMs);
    if (this.ending?.kind === 'failed' && this.ending.error instanceof TransportError) throw this.ending.error;
  }
}
