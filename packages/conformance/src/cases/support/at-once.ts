/**
 * Calls that must settle at once, because nothing is left for the backend to
 * do: within the delivery bound, never the case's whole limit. A call still
 * pending then is judged only once the backend has answered: a round trip
 * measured at that moment extends the bound to five of them where the
 * backend has slowed since the case began (a testee's process starved on a
 * loaded machine), and stalls of the kit's own process are added.
 */
import { ConformanceFailure, describeError } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { deliveryBound, freshRoundTrip, settledWithinLag } from '../../timing.js';

/** How `promise` settled within the delivery bound, extended as the module says; and the bound. */
export async function settledAtOnce<T>(ctx: CaseContext, promise: Promise<T>): Promise<{ outcome: Awaited<ReturnType<typeof settledWithinLag<T>>>; within: number }> {
  const began = performance.now();
  let within = await deliveryBound(ctx);
  let outcome = await settledWithinLag(promise, within);
  if (outcome === 'pending') {
    const freshMs = await freshRoundTrip(ctx, Math.max(2_000, 4 * within));
    if (freshMs !== undefined) within = Math.max(within, await deliveryBound(ctx, freshMs));
    outcome = await settledWithinLag(promise, Math.max(0, within - (performance.now() - began)));
  }
  return { outcome, within };
}

/** Settles `promise` within the delivery bound, or fails saying what did not happen at once. */
export async function atOnce<T>(ctx: CaseContext, promise: Promise<T>, what: string): Promise<T> {
  const { outcome, within } = await settledAtOnce(ctx, promise);
  if (outcome === 'pending') throw new ConformanceFailure(`${what} did not settle within ${within} ms; it must at once`);
  if (outcome.rejected) throw new ConformanceFailure(`${what} rejected with ${describeError(outcome.reason)}`);
  return outcome.value;
}

/** Rejects within the delivery bound, or fails saying that `what` did not settle at once or resolved. */
export async function rejectsAtOnce(ctx: CaseContext, promise: Promise<unknown>, what: string): Promise<unknown> {
  const { outcome, within } = await settledAtOnce(ctx, promise);
  if (outcome === 'pending') throw new ConformanceFailure(`${what} did not settle within ${within} ms, though started() had rejected; it must reject as started() does`);
  if (!outcome.rejected) throw new ConformanceFailure(`${what} resolved; it must reject as started() does`);
  return outcome.reason;
}
