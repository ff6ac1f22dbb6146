/**
 * The one bounded retry policy of the remote adapters: every loop that
 * repeats a request (a kill after a broken link, a sweep, a poll for an
 * exit, a log or stdin request a service throttled) runs through
 * {@link retry} with a {@link RetryPolicy}, so the bounds are stated once and
 * read the same everywhere.
 *
 * Only idempotent requests are retried: a kill, a sweep, a listing, a read.
 * A start, or a write whose delivery is uncertain, is never repeated (the
 * caller decides; {@link retry} repeats whatever it is given).
 */

/** How often and how fast a request is repeated. */
export interface RetryPolicy {
  /** Tries in all, the first included (at least 1). */
  readonly attempts: number;
  /** The wait before the second try, in ms; each later wait doubles, up to {@link capMs}. */
  readonly baseMs: number;
  /** The longest wait between two tries, in ms. */
  readonly capMs: number;
  /**
   * How much of each wait is random, 0 to 1 (0.5: between half the wait and
   * the whole of it), so that many commands failing at once do not retry
   * in step.
   */
  readonly jitter: number;
  /** No try starts later than this many ms after the first; undefined: only `attempts` bounds. */
  readonly deadlineMs?: number;
}

/** The default: 8 tries over at most 15 s, waits from 50 ms doubling to 2 s, half of each random. */
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({ attempts: 8, baseMs: 50, capMs: 2_000, jitter: 0.5, deadlineMs: 15_000 });

/** What one try is told. */
export interface Attempt {
  /** 0 for the first try. */
  readonly index: number;
  /** Time left before the deadline, in ms (at least 1), for the request's own bound; `Infinity` without one. */
  readonly remainingMs: number;
}

/** How {@link retry} reads a failure. */
export interface RetryOptions {
  /** Whether the failure may pass with a retry (default: every failure). */
  readonly retryable?: (error: unknown) => boolean;
  /**
   * The wait the service asked for (an HTTP `Retry-After`), in ms, which
   * replaces the policy's wait for that retry (never past the deadline).
   */
  readonly retryAfterMs?: (error: unknown) => number | undefined;
  /** Stops waiting and rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** A number in [0, 1): the jitter's randomness (default `Math.random`; tests fix it). */
  readonly random?: () => number;
}

/** The wait before try `index + 1` after try `index` failed, as the policy states it. */
export function backoffMs(policy: RetryPolicy, index: number, random: () => number = Math.random): number {
  const full = Math.min(policy.capMs, policy.baseMs * 2 ** index);
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  return full * (1 - jitter) + full * jitter * random();
}

/**
 * Runs `attempt` until it resolves, a failure is not retryable, the tries
 * are used up, or the deadline passed; then rejects with the last failure.
 *
 * @example
 * ```ts
 * import { retry, DEFAULT_RETRY } from '@sandstream/remote';
 *
 * let calls = 0;
 * const value = await retry(DEFAULT_RETRY, async () => {
 *   calls += 1;
 *   if (calls < 3) throw new Error('busy');
 *   return 'done';
 * });
 * // value === 'done' after three tries
 * ```
 */
export async function retry<T>(policy: RetryPolicy, attempt: (attempt: Attempt) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const started = performance.now();
  const deadline = policy.deadlineMs === undefined ? Infinity : started + policy.deadlineMs;
  const attempts = Math.max(1, Math.floor(policy.attempts));
  for (let index = 0; ; index++) {
    options.signal?.throwIfAborted();
    try {
      return await attempt({ index, remainingMs: Math.max(1, deadline - performance.now()) });
    } catch (error) {
      if (index + 1 >= attempts || !(options.retryable?.(error) ?? true)) throw error;
      const asked = options.retryAfterMs?.(error);
      const wait = asked !== undefined && asked >= 0 ? asked : backoffMs(policy, index, options.random);
      if (performance.now() + wait >= deadline) throw error;
      await pause(wait, options.signal);
    }
  }
}

/** Reads an HTTP `Retry-After` value (seconds, or an HTTP date) as ms from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
