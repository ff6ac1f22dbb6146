/**
 * Which cases run side by side. Independent cases run concurrently (each on
 * its own sandbox); a case listed here runs alone, with nothing else in
 * flight, and says why. See ADR-0029.
 */
import type { ConformanceCase } from './case.js';

/** The default of `concurrency`, chosen by measurement (ADR-0029). */
export const DEFAULT_CONCURRENCY = 1;

/** Cases that must run alone, and why. */
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
  const own = (testCase as { runsAlone?: unknown }).runsAlone;
  if (typeof own === 'string' && own !== '') return own;
  return RUNS_ALONE.get(testCase.id);
}

/**
 * Runs `task` for each item, at most `concurrency` at a time, in order of
 * the list; an item for which `alone` holds waits for everything in flight
 * and runs with nothing beside it. Resolves when every task has settled;
 * tasks must not reject.
 */
export async function runScheduled<T>(
  items: readonly T[],
  concurrency: number,
  alone: (item: T) => boolean,
  task: (item: T) => Promise<void>,
): Promise<void> {
  const running = new Set<Promise<void>>();
  for (const item of items) {
    const solo = alone(item);
    // A solo item waits for all; any item waits for a free slot.
    while (running.size > 0 && (solo || running.size >= concurrency)) await Promise.race(running);
    const run = task(item).finally(() => running.delete(run));
    running.add(run);
    if (solo) await run;
  }
  await Promise.all(running);
}
