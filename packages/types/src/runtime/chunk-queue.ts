import type { OutputChunk } from '../schema/output-chunk.js';

/** How the queue slows the producer down: the driver's optional pause/resume. */
export interface FlowControl {
  pause(): void;
  resume(): void;
}

interface Waiter {
  resolve(value: IteratorResult<OutputChunk, undefined>): void;
  reject(error: unknown): void;
}

/**
 * The chunks of a streamed command that nobody has read yet, with
 * backpressure: the producer is paused once the unread bytes reach the
 * high-water mark, and resumed once the reader brought them down to half
 * of it. At most one reader waits at a time.
 *
 * It also decides what a pending `wait()` does to unread output (SS-WAIT-3):
 * output no live iterator will read is discarded, while a loop that is
 * reading keeps receiving every chunk to the end.
 * - Without an iterator, unread output is discarded at once.
 * - An iterator waiting for a chunk when `wait()` is called, or asking for
 *   one afterwards, is reading: nothing is discarded, and a reader that
 *   falls behind pauses the producer as usual.
 * - An iterator that exists but has not asked for a chunk since `wait()`
 *   was called is given until a high-water mark of output is unread; then
 *   it is taken as abandoned (left without `return()`) and the output is
 *   discarded, so `wait()` cannot hang on it.
 */
export class ChunkQueue {
  private chunks: OutputChunk[] = [];
  private head = 0;
  private unreadBytes = 0;
  private waiter: Waiter | undefined;
  private producerPaused = false;
  private onResume: (() => void) | undefined;
  private dropping = false;
  /** Set once termination began: the queue may grow to the teardown mark. */
  private tearingDown = false;
  /** The iterator, as `wait()` sees it: none yet, created, or known to be reading. */
  private reader: 'none' | 'attached' | 'reading' = 'none';
  private resultAwaited = false;

  constructor(
    private readonly highWaterMark: number,
    private readonly flow: FlowControl,
  ) {}

  /** True while the producer is paused because the reader is behind. */
  get paused(): boolean {
    return this.producerPaused;
  }

  /** True once {@link discard} was called: nothing is queued any more. */
  get discarding(): boolean {
    return this.dropping;
  }

  /** Hands a chunk to the waiting reader, or queues it. Dropped once discarding. */
  push(chunk: OutputChunk): void {
    if (this.dropping) return;
    if (this.waiter !== undefined) {
      const waiter = this.waiter;
      this.waiter = undefined;
      waiter.resolve({ value: chunk, done: false });
      return;
    }
    this.chunks.push(chunk);
    this.unreadBytes += chunk.data.byteLength;
    if (!this.producerPaused && this.unreadBytes >= this.pauseMark()) {
      if (this.resultAwaited && this.reader === 'attached') {
        // Nobody has read since wait() was called: taken as abandoned.
        this.discard();
        return;
      }
      this.producerPaused = true;
      this.flow.pause();
    }
  }

  /** An iterator was created: `wait()` leaves the output to its loop. */
  attachReader(): void {
    this.reader = 'attached';
  }

  /** `wait()` was called: discards what no live iterator will read (see the class comment). */
  resultRequested(): void {
    this.resultAwaited = true;
    if (this.reader === 'none') this.discard();
    else if (this.waiter !== undefined) this.reader = 'reading';
    else if (this.producerPaused) this.discard(); // a high-water mark is unread already
  }

  /** The oldest unread chunk, or undefined when none is queued. Called by the iterator for every chunk. */
  shift(): OutputChunk | undefined {
    if (this.resultAwaited && this.reader === 'attached') this.reader = 'reading';
    if (this.head >= this.chunks.length) return undefined;
    const chunk = this.chunks[this.head]!;
    this.chunks[this.head++] = undefined as never;
    this.unreadBytes -= chunk.data.byteLength;
    if (this.head === this.chunks.length) {
      this.chunks = [];
      this.head = 0;
    }
    if (this.producerPaused && this.unreadBytes <= this.highWaterMark / 2) this.resumeProducer();
    return chunk;
  }

  /** Waits for the next chunk pushed. Rejects with TypeError while another wait is pending. */
  nextPushed(): Promise<IteratorResult<OutputChunk, undefined>> {
    if (this.waiter !== undefined) {
      return Promise.reject(new TypeError('next() called again before the previous call resolved'));
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** Ends a pending wait: done, or rejected with `error`. */
  end(error: Error | undefined): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter === undefined) return;
    if (error !== undefined) waiter.reject(error);
    else waiter.resolve({ value: undefined, done: true });
  }

  /** Drops unread output and stops queueing: nobody will read it. */
  discard(): void {
    this.dropping = true;
    this.chunks = [];
    this.head = 0;
    this.unreadBytes = 0;
    this.resumeProducer();
  }

  /**
   * Termination began. The queue may now grow by one more high-water mark,
   * so a command blocked on a full pipe can still write its last words from
   * a SIGTERM handler; a command that keeps flooding output is paused again
   * and dies by SIGKILL, rather than filling memory for the whole grace
   * period.
   */
  allowTeardownSlack(): void {
    this.tearingDown = true;
    if (this.unreadBytes < this.pauseMark()) this.resumeProducer();
  }

  /** Resolves the next time a paused producer is resumed. */
  whenResumed(): Promise<void> {
    return new Promise((resolve) => {
      const previous = this.onResume;
      this.onResume = () => {
        previous?.();
        resolve();
      };
    });
  }

  private pauseMark(): number {
    return this.tearingDown ? 2 * this.highWaterMark : this.highWaterMark;
  }

  private resumeProducer(): void {
    if (!this.producerPaused) return;
    this.producerPaused = false;
    this.flow.resume();
    const resumed = this.onResume;
    this.onResume = undefined;
    resumed?.();
  }
}
