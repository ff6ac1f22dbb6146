/**
 * Calls that must settle at once, because nothing is left for the backend to
 * do: within the delivery bound, never the case's whole limit.
 */
import { ConformanceFailure, describeError } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { deliveryBound, settledWithin } from './observe.js';

/** Settles `promise` within the delivery bound, or fails saying what did not happen at once. */
export async function atOnce<T>(ctx: CaseContext, promise: Promise<T>, what: string): Promise<T> {
  const within = await deliveryBound(ctx);
  const outcome = await settledWithin(promise, within);
  if (outcome === 'pending') throw new ConformanceFailure(`${what} did not settle within ${within} ms; it must at once`);
  if (outcome.rejected) throw new ConformanceFailure(`${what} rejected with ${describeError(outcome.reason)}`);
  return outcome.value;
}

/** Rejects within the delivery bound, or fails saying that `what` did not settle at once or resolved. */
export async function rejectsAtOnce(ctx: CaseContext, promise: Promise<unknown>, what: string): Promise<unknown> {
  const within = await deliveryBound(ctx);
  const outcome = await settledWithin(promise, within);
  if (outcome === 'pending') throw new ConformanceFailure(`${what} did not settle within ${within} ms, though started() had rejected; it must reject as started() does`);
  if (!outcome.rejected) throw new ConformanceFailure(`${what} resolved; it must reject as started() does`);
  return outcome.reason;
}
