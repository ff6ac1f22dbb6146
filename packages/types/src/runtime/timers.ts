/** The longest delay setTimeout honours; longer ones fire after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timer that can be cancelled; cancelling it twice, or after it fired, is harmless. */
export interface Timer {
  cancel(): void;
}

/** setTimeout for any finite delay: longer ones are chained, not cut to 1 ms. */
export function longTimeout(callback: () => void, ms: number): Timer {
  let timer: NodeJS.Timeout | undefined;
  const arm = (left: number): void => {
    timer = left > MAX_TIMER_MS ? setTimeout(() => arm(left - MAX_TIMER_MS), MAX_TIMER_MS) : setTimeout(callback, left);
  };
  arm(ms);
  return { cancel: () => clearTimeout(timer) };
}

/** What {@link within} settles with when the time ran out first. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * Settles like `promise`, or with {@link TIMED_OUT} after `ms`. The runtime's
 * one bounded wait: the timer never outlives the race, and a delay longer
 * than setTimeout can hold is honoured.
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: Timer | undefined;
  const expiry = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = longTimeout(() => resolve(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([promise, expiry]);
  } finally {
    timer?.cancel();
  }
}
