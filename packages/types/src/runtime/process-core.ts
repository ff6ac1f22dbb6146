import {
  AbortError,
  CallbackFailed,
  SandstreamError,
  SpawnFailed,
  StdinClosed,
  TransportError,
} from '../errors.js';
import type { Signal } from '../options.js';
import { createExecResult } from '../result.js';
import type { ExecResult } from '../schema/exec-result.js';
import type { OutputChunk, StreamName } from '../schema/output-chunk.js';
import type { ExecutionPlan } from '../validate-options.js';
import type { DriverEvents, ExitStatus, ProcessDriver } from './driver.js';

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

type Phase = 'starting' | 'running' | 'settled';

interface Waiter {
  resolve(value: IteratorResult<OutputChunk, undefined>): void;
  reject(error: unknown): void;
}

/** Accumulates one stream's bytes for `run()`, up to the cap. */
class Capture {
  private readonly parts: Uint8Array[] = [];
  private kept = 0;
  truncated = false;
  constructor(private readonly cap: number) {}

  add(data: Uint8Array): void {
    const room = this.cap - this.kept;
    if (data.byteLength <= room) {
      this.parts.push(data);
      this.kept += data.byteLength;
      return;
    }
    if (room > 0) {
      this.parts.push(data.subarray(0, room));
      this.kept += room;
    }
    this.truncated = true;
  }

  /**
   * The kept bytes as a plain Uint8Array that owns its memory: never a view
   * into Node's shared Buffer pool (whose other contents `.buffer` would
   * expose) nor into a larger read buffer (which it would keep alive).
   */
  bytes(): Uint8Array {
    const only = this.parts.length === 1 ? this.parts[0]! : undefined;
    if (only !== undefined && only.byteOffset === 0 && only.byteLength === only.buffer.byteLength) {
      return new Uint8Array(only.buffer, 0, only.byteLength);
    }
    const out = new Uint8Array(this.kept);
    let offset = 0;
    for (const part of this.parts) {
      out.set(part, offset);
      offset += part.byteLength;
    }
    return out;
  }
}

/** The longest delay setTimeout honours; longer ones fire after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** setTimeout for any finite delay: longer ones are chained, not cut to 1 ms. */
function longTimeout(callback: () => void, ms: number): { cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const arm = (left: number): void => {
    timer = left > MAX_TIMER_MS ? setTimeout(() => arm(left - MAX_TIMER_MS), MAX_TIMER_MS) : setTimeout(callback, left);
  };
  arm(ms);
  return { cancel: () => clearTimeout(timer) };
}

const TIMED_OUT = Symbol('timed out');

/** Settles like `promise`, or with TIMED_OUT after `ms`; the timer never outlives the race. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: { cancel(): void } | undefined;
  const expiry = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = longTimeout(() => resolve(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([promise, expiry]);
  } finally {
    timer?.cancel();
  }
}

/**
 * What a backend failure becomes for the caller: errors the contract
 * defines for that step pass through (`keep`); anything else is a
 * TransportError carrying the original as its cause.
 */
function asTransport(error: unknown, step: string, keep: ReadonlyArray<abstract new (...args: never[]) => SandstreamError> = []): SandstreamError {
  if (error instanceof TransportError || keep.some((kind) => error instanceof kind)) return error as SandstreamError;
  return new TransportError(`${step} failed: ${asError(error).message}`, { cause: error });
}

/**
 * One 'abort' listener per signal, fanned out to every command that shares
 * it: a caller passing one signal to many commands must not trip Node's
 * listener-leak warning.
 */
interface AbortFanOut {
  readonly subscribers: Set<() => void>;
  readonly listener: () => void;
}

const abortFanOuts = new WeakMap<AbortSignal, AbortFanOut>();

function onAbortOf(signal: AbortSignal, callback: () => void): () => void {
  let fanOut = abortFanOuts.get(signal);
  if (fanOut === undefined) {
    const subscribers = new Set<() => void>();
    const listener = (): void => {
      abortFanOuts.delete(signal);
      for (const subscriber of subscribers) subscriber();
    };
    fanOut = { subscribers, listener };
    abortFanOuts.set(signal, fanOut);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { subscribers, listener } = fanOut;
  subscribers.add(callback);
  return () => {
    subscribers.delete(callback);
    if (subscribers.size === 0 && abortFanOuts.get(signal) === fanOut) {
      // The last command using this signal is done: leave nothing attached to it.
      abortFanOuts.delete(signal);
      signal.removeEventListener('abort', listener);
    }
  };
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * The Process state machine, written once for every adapter. It owns the
 * chunk queue, backpressure, timeout, abort, teardown order and the result;
 * the driver owns only the backend.
 *
 * It holds no reference to the public Process object, so that object can
 * be garbage-collected (and the leak caught) while the core lives on.
 */
export class ProcessCore {
  readonly startedAt = performance.now();
  pid: number | undefined;

  private phase: Phase = 'starting';
  private readonly settledPromise: Promise<void>;
  private resolveSettled!: () => void;
  private status: ExitStatus | undefined;
  private endedAt = 0;
  /** Why the command failed to start or to report, if it did. */
  private failure: Error | undefined;
  private timedOut = false;
  private abortReason: unknown;
  private aborted = false;
  private neverStarted = false;
  private callbackError: unknown;
  private callbackFailed = false;

  // Stream mode: the queue of unread chunks.
  private queue: OutputChunk[] = [];
  private queueHead = 0;
  private queuedBytes = 0;
  private waiter: Waiter | undefined;
  private paused = false;
  private onResume: (() => void) | undefined;
  private discarding = false;
  /** Set once termination began: the queue may grow to the teardown mark. */
  private tearingDown = false;

  // Run mode: what is kept.
  private readonly captures: Record<StreamName, Capture> | undefined;

  private terminating: Promise<void> | undefined;
  private timeoutTimer: { cancel(): void } | undefined;
  private readonly onAbort = (): void => {
    this.aborted = true;
    this.abortReason = this.plan.signal?.reason;
    void this.terminate();
  };
  private resultPromise: Promise<ExecResult> | undefined;
  private unsubscribeAbort: (() => void) | undefined;
  private releasing: Promise<void> | undefined;
  private released: Promise<void> | undefined;
  private readonly started: Promise<void>;

  constructor(
    readonly id: string,
    readonly plan: ExecutionPlan,
    private readonly driver: ProcessDriver,
    readonly mode: CoreMode,
    private readonly settings: CoreSettings,
  ) {
    this.settledPromise = new Promise((resolve) => {
      this.resolveSettled = resolve;
    });
    this.captures =
      mode === 'run'
        ? { stdout: new Capture(plan.maxOutputBytes), stderr: new Capture(plan.maxOutputBytes) }
        : undefined;

    const events: DriverEvents = {
      output: (stream, data) => this.handleOutput(stream, data),
      exit: (status) => this.settle(status, undefined),
      leaderExited: () => this.disarm(),
      fail: (error) => this.settle(undefined, error),
    };
    if (plan.timeout !== undefined) {
      this.timeoutTimer = longTimeout(() => {
        this.timedOut = true;
        void this.terminate();
      }, plan.timeout);
    }
    if (plan.signal?.aborted) {
      // Already aborted: nothing is started, so there is nothing to tear down
      // and no result to report, exactly as run() refuses such a call.
      this.neverStarted = true;
      this.aborted = true;
      this.abortReason = plan.signal.reason;
      this.started = Promise.resolve();
      this.settle(undefined, undefined);
      return;
    }
    if (plan.signal !== undefined) this.unsubscribeAbort = onAbortOf(plan.signal, this.onAbort);

    this.started = this.start(events);
  }

  private async start(events: DriverEvents): Promise<void> {
    try {
      const info = await this.driver.start(events);
      this.pid = info.pid;
      if (this.phase === 'starting') this.phase = 'running';
    } catch (error) {
      this.settle(undefined, asTransport(error, 'start', [SpawnFailed]));
      return;
    }
    // Fed in the background: `started` means "started", not "read all its
    // input", or a command that never reads would block its own teardown.
    if (this.plan.input !== undefined) void this.feedInput(this.plan.input);
  }

  private async feedInput(input: Uint8Array): Promise<void> {
    // One-shot input: a command that exits without reading it all is fine,
    // as a shell treats a closed pipe.
    try {
      await this.driver.writeStdin(input);
      await this.driver.closeStdin();
    } catch (error) {
      if (error instanceof StdinClosed || this.phase === 'settled') return;
      // The link broke: the command's result cannot be trusted, so it ends
      // with the failure once it is gone.
      this.failure ??= asTransport(error, 'writing the input');
      void this.terminate();
    }
  }

  get settled(): boolean {
    return this.phase === 'settled';
  }

  /** Resolves once the command's fate is known (exit or failure). Never rejects. */
  whenSettled(): Promise<void> {
    return this.settledPromise;
  }

  // ---- output ---------------------------------------------------------

  private handleOutput(stream: StreamName, data: Uint8Array): void {
    if (this.phase === 'settled' || data.byteLength === 0) return;
    const chunk: OutputChunk = { stream, data };
    if (this.plan.onOutput !== undefined && !this.callbackFailed) {
      try {
        this.plan.onOutput(chunk);
      } catch (error) {
        this.callbackFailed = true;
        this.callbackError = error;
        void this.terminate();
      }
    }
    if (this.captures !== undefined) {
      this.captures[stream].add(data);
      return;
    }
    if (this.discarding) return;
    if (this.waiter !== undefined) {
      const waiter = this.waiter;
      this.waiter = undefined;
      waiter.resolve({ value: chunk, done: false });
      return;
    }
    this.queue.push(chunk);
    this.queuedBytes += data.byteLength;
    if (!this.paused && this.queuedBytes >= this.pauseMark()) {
      this.paused = true;
      this.driver.pause?.();
    }
  }

  /**
   * Queued bytes at which the driver is paused. During teardown the queue
   * may grow by one more high-water mark, so a command blocked on a full
   * pipe can still write its last words from a SIGTERM handler; a command
   * that keeps flooding output is paused again and dies by SIGKILL, rather
   * than filling memory for the whole grace period.
   */
  private pauseMark(): number {
    return this.tearingDown ? 2 * this.settings.highWaterMark : this.settings.highWaterMark;
  }

  private resumeIfPaused(): void {
    if (this.paused) {
      this.paused = false;
      this.driver.resume?.();
      const resumed = this.onResume;
      this.onResume = undefined;
      resumed?.();
    }
  }

  /** Resolves the next time a paused driver is resumed. */
  private whenResumed(): Promise<void> {
    return new Promise((resolve) => {
      const previous = this.onResume;
      this.onResume = () => {
        previous?.();
        resolve();
      };
    });
  }

  /** Drops unread output and stops queueing: nobody will read it. */
  discard(): void {
    this.discarding = true;
    this.queue = [];
    this.queueHead = 0;
    this.queuedBytes = 0;
    this.resumeIfPaused();
  }

  /** Pulls the next chunk for the iterator. */
  next(): Promise<IteratorResult<OutputChunk, undefined>> {
    if (this.queueHead < this.queue.length) {
      const chunk = this.queue[this.queueHead]!;
      this.queue[this.queueHead++] = undefined as never;
      this.queuedBytes -= chunk.data.byteLength;
      if (this.queueHead === this.queue.length) {
        this.queue = [];
        this.queueHead = 0;
      }
      if (this.paused && this.queuedBytes <= this.settings.highWaterMark / 2) this.resumeIfPaused();
      return Promise.resolve({ value: chunk, done: false });
    }
    if (this.phase === 'settled' || this.discarding) {
      return this.settledPromise.then(() => {
        const error = this.terminalError(true);
        if (error !== undefined) throw error;
        return { value: undefined, done: true };
      });
    }
    if (this.waiter !== undefined) {
      return Promise.reject(new TypeError('next() called again before the previous call resolved'));
    }
    // After an abort too, output keeps coming (what a SIGTERM handler
    // writes, say) until the command is gone; settle() then ends the loop
    // with the AbortError.
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  // ---- ending ---------------------------------------------------------

  /**
   * The command itself has ended: its timeout and the caller's signal no
   * longer count against it, even while what it started is wound down.
   */
  private disarm(): void {
    this.timeoutTimer?.cancel();
    this.unsubscribeAbort?.();
    this.unsubscribeAbort = undefined;
  }

  private settle(status: ExitStatus | undefined, failure: unknown): void {
    if (this.phase === 'settled') return;
    this.phase = 'settled';
    this.endedAt = performance.now();
    this.status = status;
    if (failure !== undefined) this.failure = asError(failure);
    this.disarm();
    this.resolveSettled();
    // The driver has reported its last event: free the transport (its pipes,
    // standard input included) now, not only when someone disposes.
    this.releasing = this.neverStarted
      ? Promise.resolve()
      : Promise.resolve().then(() => this.driver.release?.()).catch(() => undefined);
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter !== undefined) {
      const error = this.terminalError(true);
      if (error !== undefined) waiter.reject(error);
      else waiter.resolve({ value: undefined, done: true });
    }
  }

  private failTransport(error: Error): void {
    this.settle(undefined, asTransport(error, 'the backend'));
  }

  /** The error the command ended with, if any, for iteration (`streamed`) or run. */
  private terminalError(streamed: boolean): Error | undefined {
    if (this.failure !== undefined) return this.failure;
    if (this.aborted) {
      return new AbortError(this.neverStarted ? undefined : this.buildResult(streamed), { cause: this.abortReason });
    }
    if (this.callbackFailed) return new CallbackFailed(this.buildResult(streamed), { cause: this.callbackError });
    return undefined;
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
      timedOut: this.timedOut,
      durationMs: Math.max(0, this.endedAt - this.startedAt),
    });
  }

  /**
   * The terminal result. Idempotent. In stream mode unread output is
   * drained and discarded first.
   */
  result(): Promise<ExecResult> {
    if (this.resultPromise === undefined) {
      if (this.mode === 'stream') this.discard();
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
  async kill(signal: Signal): Promise<void> {
    if (!(await this.startedWithin(this.settings.killWaitMs))) {
      throw new TransportError(`the backend did not confirm the start within ${this.settings.killWaitMs} ms`);
    }
    if (this.phase === 'settled') return;
    const outcome = await this.boundedSignal(signal, this.settings.killWaitMs);
    if (outcome === 'timeout') {
      throw new TransportError(`the backend did not confirm ${signal} within ${this.settings.killWaitMs} ms`);
    }
    if (outcome instanceof Error) throw asTransport(outcome, `sending ${signal}`);
  }

  /** Sends a signal, waiting at most `ms` for the backend to confirm it. */
  private async boundedSignal(signal: Signal, ms: number): Promise<'sent' | 'timeout' | Error> {
    const sending = this.driver.signal(signal).then(
      () => 'sent' as const,
      (error: unknown) => asError(error),
    );
    const outcome = await within(sending, ms);
    return outcome === TIMED_OUT ? 'timeout' : outcome;
  }

  /**
   * SIGTERM, then SIGKILL after the grace period, then a bounded wait for
   * the exit report. Runs on internal timers only, so it completes even when
   * the caller's own signal has long been aborted. Idempotent.
   */
  terminate(): Promise<void> {
    this.terminating ??= this.runTermination();
    return this.terminating;
  }

  private async runTermination(): Promise<void> {
    // Output still flows during teardown (up to the teardown mark) so a
    // child blocked on a full pipe can act on SIGTERM.
    this.tearingDown = true;
    if (this.queuedBytes < this.pauseMark()) this.resumeIfPaused();
    // A start that is never confirmed cannot be signalled: after the whole
    // budget of the sequence the command is declared lost, and still
    // killed should the start be confirmed after all.
    if (!(await this.startedWithin(this.settings.graceMs + this.settings.killWaitMs))) {
      void this.started.then(() => this.driver.signal('SIGKILL')).catch(() => undefined);
      this.failTransport(new TransportError('the backend never confirmed the start; the command may be running'));
      return;
    }
    if (this.phase === 'settled') return;
    const steps: Array<[Signal, number]> = [
      ['SIGTERM', this.settings.graceMs],
      ['SIGKILL', this.settings.killWaitMs],
    ];
    // Each step has its own deadline, and a signal the backend never confirms
    // counts against it: the sequence is bounded even when the link hangs.
    for (const [signal, wait] of steps) {
      const deadline = performance.now() + wait;
      const left = (): number => Math.max(0, deadline - performance.now());
      const outcome = await this.boundedSignal(signal, wait);
      if (this.settled) return;
      if (outcome instanceof Error) {
        if (signal === 'SIGKILL') {
          this.failTransport(outcome);
          return;
        }
        continue; // SIGTERM could not be sent: waiting for its effect is pointless
      }
      // A stopped command cannot act on SIGTERM until it is continued; a
      // backend that cannot send SIGCONT loses nothing but that.
      if (signal === 'SIGTERM' && outcome === 'sent') await this.boundedSignal('SIGCONT', left());
      if (this.settled) return;
      if (await this.settlesWithin(left())) return;
    }
    // A driver reports the exit once all output is delivered. While it is
    // paused because the reader is behind, a missing report is the reader's
    // pace, not a broken link: each time reading resumes, the driver gets
    // another window to finish.
    while (this.paused) {
      await Promise.race([this.settledPromise, this.whenResumed()]);
      if (this.settled) return;
      if (await this.settlesWithin(this.settings.killWaitMs)) return;
    }
    this.failTransport(
      new TransportError(`no exit was reported within ${this.settings.killWaitMs} ms of SIGKILL`),
    );
  }

  /** Waits up to `ms` for the start to be confirmed (or to fail); true when it was. */
  private async startedWithin(ms: number): Promise<boolean> {
    return (await within(this.started, ms)) !== TIMED_OUT;
  }

  /** Waits up to `ms` for the exit report; true when it came. */
  private async settlesWithin(ms: number): Promise<boolean> {
    return (await within(this.settledPromise, ms)) !== TIMED_OUT;
  }

  /**
   * Leaves the scope: discards unread output, terminates the command if it
   * is still running, and waits until the driver was released (which
   * closes standard input).
   * Rejects only when termination could not be confirmed.
   */
  dispose(): Promise<void> {
    this.released ??= this.runDispose();
    return this.released;
  }

  private async runDispose(): Promise<void> {
    this.discard();
    await this.terminate();
    // Released once settled (a failure to free the transport changes nothing
    // for the caller, and a release that hangs does not hold the scope).
    await within(this.releasing ?? Promise.resolve(), this.settings.killWaitMs);
    if (this.failure instanceof TransportError) throw this.failure;
  }

  // ---- stdin ----------------------------------------------------------

  private stdinChain: Promise<void> = Promise.resolve();
  private stdinEnded: Promise<void> | undefined;
  /** The pipe was found closed (the command exited or stopped reading). */
  private stdinBroken = false;

  /** True once `end()` was called or the pipe was found closed. */
  get stdinClosed(): boolean {
    return this.stdinEnded !== undefined || this.stdinBroken || this.phase === 'settled';
  }

  writeStdin(data: Uint8Array): Promise<void> {
    if (this.stdinClosed) return Promise.reject(new StdinClosed('standard input is closed'));
    // Writes queued before end() still go out, in call order; end() is
    // chained behind them.
    const write = this.stdinChain.then(async () => {
      await Promise.race([this.started, this.settledPromise]);
      if (this.stdinBroken || this.phase === 'settled') {
        this.stdinBroken = true;
        throw new StdinClosed('the command has exited; standard input is closed');
      }
      try {
        await this.driver.writeStdin(data);
      } catch (error) {
        if (error instanceof StdinClosed) this.stdinBroken = true;
        throw asTransport(error, 'writing standard input', [StdinClosed]);
      }
    });
    this.stdinChain = write.catch(() => undefined);
    return write;
  }

  endStdin(): Promise<void> {
    if (this.stdinEnded === undefined) {
      this.stdinEnded = this.stdinChain.then(async () => {
        await Promise.race([this.started, this.settledPromise]);
        if (this.phase === 'settled') return;
        try {
          await this.driver.closeStdin();
        } catch (error) {
          if (!(error instanceof StdinClosed)) throw asTransport(error, 'closing standard input');
        }
      });
    }
    return this.stdinEnded;
  }
}
