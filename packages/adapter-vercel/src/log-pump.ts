import type { LogLine } from './api.js';

/** A log stream as the SDK opens it: replayed from the command's start. */
export type LogSource = AsyncIterable<LogLine> & { close(): void };

/** Options of {@link LogPump}. */
export interface LogPumpOptions {
  /** Opens the command's log stream (from the start) once more. */
  open(signal: AbortSignal): LogSource;
  /** Where every record goes, as UTF-8 bytes, exactly once and in order. */
  deliver(stream: 'stdout' | 'stderr', data: Uint8Array): void;
  /** Whether an error of the stream is worth reopening it (a drop), rather than final. */
  resumable(error: unknown): boolean;
  /**
   * Asked when the stream ends cleanly: true when that cannot be its real
   * end (the command still runs, and the service ends a log stream only
   * once the command ended), so it was cut, by a proxy say, and is reopened
   * as after a drop. Default: every clean end is the real one.
   */
  endedEarly?(): Promise<boolean>;
  /** Reopenings in a row without new output before giving up (default 5). */
  maxAttempts?: number;
  /** Wait before the n-th reopening in a row (default 25 ms doubled per attempt, at most 1 s). */
  backoffMs?(attempt: number): number;
}

const encoder = new TextEncoder();

/**
 * The one reader of a command's log stream. It pulls records and pushes
 * each to a single sink; there is no lock between consumers and no reader
 * that waits for another to pump, so the lost wakeup of a shared,
 * lock-serialised pump cannot happen: a record is delivered the moment it
 * is read, whoever is waiting for which stream. Backpressure is the only
 * reason it stops reading ({@link pause}), and it then holds the HTTP
 * stream, so the service buffers.
 *
 * A stream that breaks (reset, truncated body), or ends cleanly while the
 * command still runs ({@link LogPumpOptions.endedEarly}), is reopened; the
 * service replays it from the start and the pump skips, per stream, the
 * bytes it already delivered, so nothing is lost or repeated.
 */
export class LogPump {
  /** UTF-8 bytes delivered so far, per stream. */
  readonly delivered = { stdout: 0, stderr: 0 };
  /** How many times the stream was reopened after a break. */
  reopened = 0;
  private paused: { promise: Promise<void>; resolve: () => void } | undefined;
  private readonly controller = new AbortController();
  private source: LogSource | undefined;
  private stopped = false;

  constructor(private readonly options: LogPumpOptions) {}

  pause(): void {
    if (this.paused !== undefined) return;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.paused = { promise, resolve };
  }

  resume(): void {
    const paused = this.paused;
    this.paused = undefined;
    paused?.resolve();
  }

  /** Stops reading and closes the stream; {@link run} then resolves `'stopped'`. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.controller.abort();
    this.source?.close();
    this.resume();
  }

  /**
   * Reads until the stream ends. Resolves `'ended'` once the service ended
   * it (every record delivered), `'stopped'` after {@link stop}; rejects
   * with the stream's error when it is final or reopening kept failing.
   */
  async run(): Promise<'ended' | 'stopped'> {
    const maxAttempts = this.options.maxAttempts ?? 5;
    let failures = 0;
    let inconsistent: Error | undefined;
    for (;;) {
      if (this.stopped) return 'stopped';
      const skip = { ...this.delivered };
      const before = this.delivered.stdout + this.delivered.stderr;
      const source = this.options.open(this.controller.signal);
      this.source = source;
      try {
        for await (const line of source) {
          if (this.paused !== undefined) await this.paused.promise;
          if (this.stopped) return 'stopped';
          const stream = line.stream;
          let bytes = encoder.encode(line.data);
          const already = skip[stream];
          if (already > 0) {
            if (bytes.byteLength <= already) {
              skip[stream] -= bytes.byteLength;
              continue;
            }
            bytes = bytes.subarray(already);
            skip[stream] = 0;
          }
          if (bytes.byteLength === 0) continue;
          this.delivered[stream] += bytes.byteLength;
          this.options.deliver(stream, bytes);
        }
        if (this.stopped) return 'stopped';
        if (skip.stdout > 0 || skip.stderr > 0) {
          // The service's replay disagrees with what it sent before: final.
          inconsistent = new Error(
            `the replayed log stream is shorter than what was already delivered (${skip.stdout} stdout and ${skip.stderr} stderr bytes missing)`,
          );
          throw inconsistent;
        }
        if (this.options.endedEarly !== undefined && (await this.options.endedEarly())) {
          if (this.stopped) return 'stopped';
          throw new Error('the log stream ended while the command was still running');
        }
        return 'ended';
      } catch (error) {
        if (this.stopped) return 'stopped';
        if (error === inconsistent || !this.options.resumable(error)) throw error;
        const progressed = this.delivered.stdout + this.delivered.stderr > before;
        failures = progressed ? 1 : failures + 1;
        if (failures > maxAttempts) throw error;
        this.reopened++;
        const wait = this.options.backoffMs?.(failures) ?? Math.min(1_000, 25 * 2 ** (failures - 1));
        await new Promise((r) => setTimeout(r, wait));
      } finally {
        source.close();
      }
    }
  }
}
