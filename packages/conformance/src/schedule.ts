/**
 * Which cases run side by side. Independent cases run concurrently (each on
 * its own sandbox); a case listed here runs alone, with nothing else in
 * flight, and says why. See ADR-0029.
 */
import type { ConformanceCase } from './case.js';

/**
 * The concurrency `'auto'` chooses for a backend whose round trip is slow
 * enough for waiting to dominate: measured in ADR-0029.
 */
export const REMOTE_CONCURRENCY = 4;

/**
 * Below this round trip (the fastest of a few trivial commands), the
 * backend is taken for local: the machine's CPU, not waiting, bounds a run,
 * and cases run one at a time so that timing checks keep their margins.
 */
export const LOCAL_ROUND_TRIP_MS = 30;

/** What `concurrency: 'auto'` (the default) chooses for a backend with this round trip. */
export function autoConcurrency(roundTripMs: number | undefined): number {
  return roundTripMs !== undefined && roundTripMs >= LOCAL_ROUND_TRIP_MS ? REMOTE_CONCURRENCY : 1;
}

/** Cases that must run alone, and why, for those that do not say so themselves (`runsAlone` on the case). */
export const RUNS_ALONE: ReadonlyMap<string, string> = new Map([
  ['limits.cpu', 'it measures a CPU-time limit, which other cases competing for the CPU would stretch'],
  ['output-cap.truncation', 'it moves tens of MiB, which would starve the timing checks of cases beside it'],
  ['wait.drains-unread', 'it moves tens of MiB, which would starve the timing checks of cases beside it'],
  ['stdin.large-input', 'it moves tens of MiB, which would starve the timing checks of cases beside it'],
  ['teardown.garbage-collected', 'it forces garbage collection of the whole process and reads its warnings'],
  ['teardown.sigkill-after-grace', 'it measures the grace period to a fraction of its length'],
]);

/** Why `testCase` must run alone, or undefined when it may run beside others. */
export function runsAlone(testCase: ConformanceCase): string | undefined {
  return testCase.runsAlone || RUNS_ALONE.get(testCase.id);
}

/**
 * Runs `task` for each item: first every item that may share the machine,
 * at most `concurrency` at a time, taken in order of the list; then, one by
 * one with nothing beside them, the items for which `alone` holds. Grouping
 * the solo items at the end keeps a long shared item from leaving the other
 * slots idle at every solo item it would otherwise have to wait for.
 * Resolves when every task has settled; tasks must not reject.
 */
export async function runScheduled<T>(
  items: readonly T[],
  concurrency: number,
  alone: (item: T) => boolean,
  task: (item: T) => Promise<void>,
): Promise<void> {
  const shared = items.filter((item) => !alone(item));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < shared.length) await task(shared[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, shared.length) }, worker));
  for (const item of items.filter(alone)) await task(item);
}
