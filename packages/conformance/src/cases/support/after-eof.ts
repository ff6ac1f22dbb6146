/**
 * End-of-file as evidence. A command that echoes its input (`cat`) has read
 * everything once all of it came back; if the writer's end() has resolved
 * too (or run() was given the input), end-of-file is all it still waits for,
 * and its exit and last output are then due within a delivery bound (a few
 * round trips, plus any stall of the kit's own process). A case waiting on
 * such a command fails then, saying so, instead of at its time limit: an
 * adapter whose end() never closes the pipe is caught in about a second,
 * not in 30 (ADR-0051, a broken adapter's report within 3x of a correct
 * one's).
 */
import type { ExecResult, OutputChunk, Process } from '@sandstream/types';
import { ConformanceFailure } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { deliveryBound, settledWithin, settledWithinLag } from '../../timing.js';
import type { Collected } from './collect.js';

/** Resolves once its `done()` is called: the writer's end() resolved. */
export interface Ended {
  readonly promise: Promise<void>;
  done(): void;
}

/** A marker for "end() has resolved". */
export function ended(): Ended {
  let done!: () => void;
  const promise = new Promise<void>((resolve) => (done = resolve));
  return { promise, done };
}

/** `pending` (a promise of the rest) within the delivery bound, or the failure that says what never came. */
async function dueNow<T>(ctx: CaseContext, pending: Promise<T>, what: string): Promise<T> {
  const since = performance.now();
  const outcome = await settledWithinLag(pending, await deliveryBound(ctx));
  if (outcome === 'pending') {
    throw new ConformanceFailure(`${what}: it had not ended ${Math.round(performance.now() - since)} ms after every byte written came back and the input was ended, so it never saw end-of-file`);
  }
  if (outcome.rejected) throw outcome.reason;
  return outcome.value;
}

/**
 * Iterates `proc` to its end, as `collect()` does; once its standard output
 * holds `echoed` bytes and `end` has resolved, the rest is due within the
 * delivery bound (see the module's comment).
 */
export async function collectAfterEof(ctx: CaseContext, proc: Process, end: Ended, echoed: number, what: string): Promise<Collected> {
  const chunks: OutputChunk[] = [];
  let stdoutBytes = 0;
  let endResolved = false;
  void end.promise.then(() => (endResolved = true));
  const iterator = proc[Symbol.asyncIterator]();
  for (;;) {
    const next = iterator.next();
    // Quiet if the case fails first: the disposal of the Process settles it.
    next.catch(() => undefined);
    const step = endResolved && stdoutBytes >= echoed ? await dueNow(ctx, next, what) : await racing(next, end.promise, () => endResolved && stdoutBytes >= echoed, ctx, what);
    if (step.done === true) break;
    chunks.push({ stream: step.value.stream, data: Uint8Array.from(step.value.data) });
    if (step.value.stream === 'stdout') stdoutBytes += step.value.data.byteLength;
  }
  const join = (stream: 'stdout' | 'stderr'): Uint8Array => new Uint8Array(Buffer.concat(chunks.filter((c) => c.stream === stream).map((c) => c.data)));
  return { stdout: join('stdout'), stderr: join('stderr'), chunks };
}

/** `next`, or, if end() resolves first and everything came back by then, `next` within the delivery bound. */
async function racing<T>(next: Promise<T>, end: Promise<void>, due: () => boolean, ctx: CaseContext, what: string): Promise<T> {
  const first = await Promise.race([next.then(() => 'next' as const, () => 'next' as const), end.then(() => 'end' as const)]);
  if (first === 'next' || !due()) return next;
  return dueNow(ctx, next, what);
}

/**
 * A run() given input, watched through its onOutput callback (`echoedSoFar`
 * counts standard output as it comes): once `echoed` bytes came back, the
 * result is due within the delivery bound.
 */
export async function runAfterEof(ctx: CaseContext, running: Promise<ExecResult>, echoedSoFar: () => number, echoed: number, what: string): Promise<ExecResult> {
  running.catch(() => undefined);
  for (;;) {
    const outcome = await settledWithin(running, 50);
    if (outcome !== 'pending') {
      if (outcome.rejected) throw outcome.reason;
      return outcome.value;
    }
    if (echoedSoFar() >= echoed) return dueNow(ctx, running, what);
  }
}
