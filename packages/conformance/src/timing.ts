/**
 * The kit's timing: the bounds it waits within, derived from the backend's
 * measured round trip, how a promise settled within one, and the kit's own
 * host lag. The engine (run-case.ts, pending.ts) and the cases' support
 * (cases/support/observe.ts) both use them; they live here, with the engine,
 * so the engine imports nothing from the cases.
 */
import type { CaseContext } from './context.js';

/** A bound for waiting on the sandbox: `atLeast`, or several round trips of this backend. */
export function bound(ctx: CaseContext, atLeast: number): Promise<number> {
  return ctx.timeoutFor(atLeast);
}

/**
 * The least time an adapter gets to deliver what the sandbox already showed
 * done: output the command printed before it created its marker, the result
 * of a command the Process itself reports exited. Nothing is left for the
 * backend to do then but hand over what it holds, so the bound is a few
 * round trips; the floor only keeps a very fast backend from being judged in
 * a few milliseconds. Stalls of the kit's own process are added by the
 * callers (`watchHostLag`).
 */
export const DELIVERY_FLOOR_MS = 300;

/**
 * The bound for such a delivery: five round trips measured at the case's
 * start, or five times `freshMs` (a round trip measured just now, such as
 * the read that found the marker, so a backend slowed since then gets the
 * time it now needs), and at least {@link DELIVERY_FLOOR_MS}.
 */
export async function deliveryBound(ctx: CaseContext, freshMs = 0): Promise<number> {
  return Math.max(await bound(ctx, DELIVERY_FLOOR_MS), Math.ceil(5 * freshMs));
}

/**
 * A round trip to the backend measured now: how long a trivial command (`true`) takes to run, in
 * ms, or undefined when it did not come back within `withinMs` (or failed): the backend does not
 * answer, and nothing is measured.
 */
export async function freshRoundTrip(ctx: CaseContext, withinMs: number): Promise<number | undefined> {
  const began = performance.now();
  const outcome = await settledWithin(ctx.exec(['true']), withinMs);
  return outcome === 'pending' || outcome.rejected ? undefined : performance.now() - began;
}

/** The measured round trip of a trivial command on this backend (the median of three runs). */
export async function roundTrip(ctx: CaseContext): Promise<number> {
  // timeoutFor(0) is five round trips.
  return (await ctx.timeoutFor(0)) / 5;
}

/** How `promise` settled within `ms`, or 'pending'. Never leaves a rejection unhandled. */
export async function settledWithin<T>(
  promise: Promise<T>,
  ms: number,
): Promise<'pending' | { rejected: false; value: T } | { rejected: true; reason: unknown }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pending = new Promise<'pending'>((resolve) => {
    timer = setTimeout(() => resolve('pending'), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        (value) => ({ rejected: false as const, value }),
        (reason: unknown) => ({ rejected: true as const, reason }),
      ),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The host's own lateness over a window, to widen a timing check by what the kit's process lost. */
export interface LagWatch {
  /** Stops watching; the longest any 10 ms tick of this process was late, in ms. */
  stop(): number;
}

/**
 * Watches this process's event loop. A stall of the kit's own host shifts
 * when it sees output and ends, however the sandbox behaved; a timing check
 * widens its bound by the stall it measured, so it fails only on what the
 * sandbox did.
 */
export function watchHostLag(): LagWatch {
  const periodMs = 10;
  let worst = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - periodMs);
    last = now;
  }, periodMs);
  return {
    stop() {
      clearInterval(timer);
      // A stall still under way when the window ends counts too.
      return Math.max(worst, performance.now() - last - periodMs);
    },
  };
}

/**
 * {@link settledWithin}, with the bound widened by any stall of the kit's own
 * process meanwhile: a stall delays what the kit sees, not what the adapter
 * did.
 */
export async function settledWithinLag<T>(promise: Promise<T>, ms: number): ReturnType<typeof settledWithin<T>> {
  const lag = watchHostLag();
  let outcome = await settledWithin(promise, ms);
  const stalled = lag.stop();
  if (outcome === 'pending' && stalled > 0) outcome = await settledWithin(promise, stalled);
  return outcome;
}
