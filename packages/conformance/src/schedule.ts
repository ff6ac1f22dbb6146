/**
 * Which cases run side by side. Independent cases run concurrently (each on
 * its own sandbox); a case listed here runs alone, with nothing else in
 * flight, and says why; on a local backend the cases that only wait overlap
 * the others. See ADR-0029 and ADR-0032.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ConformanceCase } from './case.js';
import type { CommandCpu } from './machine-cpu.js';

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

/**
 * Below this many idle cores while the kit timed its trivial commands, the
 * machine has no CPU to give a second case: whatever part of a round trip is
 * computed here would only stretch, so cases run one at a time.
 */
export const SPARE_CORES = 0.5;

/**
 * What `concurrency: 'auto'` (the default) chooses for a backend with this
 * round trip and, when measured, this cost to the machine's CPU
 * (`machine-cpu.ts`). A local backend (below {@link LOCAL_ROUND_TRIP_MS})
 * runs one case at a time. A slower one runs as many cases side by side as
 * the idle CPU carries: a stream of commands that keeps `commandCores` busy
 * here, with `idleCores` left over, fits `1 + idleCores / commandCores`
 * times, at most {@link REMOTE_CONCURRENCY}; with less than
 * {@link SPARE_CORES} idle, one. Without a CPU measurement, the round trip
 * alone decides, as before.
 */
export function autoConcurrency(roundTripMs: number | undefined, cpu?: CommandCpu): number {
  if (roundTripMs === undefined || roundTripMs < LOCAL_ROUND_TRIP_MS) return 1;
  if (cpu === undefined) return REMOTE_CONCURRENCY;
  if (cpu.idleCores < SPARE_CORES) return 1;
  const fits = 1 + Math.floor(cpu.idleCores / Math.max(cpu.commandCores, 0.001));
  return Math.min(REMOTE_CONCURRENCY, Math.max(1, fits));
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

/**
 * Cases that spend nearly all their time waiting (on the grace period, on
 * sleeps of the sandbox's own clock) rather than on the CPU or on moving
 * data, and why. On a local backend, where other cases run one at a time,
 * these overlap them and each other: a case that waits takes a slot of
 * nothing but time. Cases among them that must otherwise run alone
 * (they measure the grace period) do so on a remote backend and under an
 * explicit `concurrency`, as before (ADR-0029, ADR-0032).
 */
export const WAITS: ReadonlyMap<string, string> = new Map([
  ['teardown.sigkill-after-grace', 'it waits out the grace period twice'],
  ['teardown.leader-exit', 'it waits out the grace period'],
  ['teardown.leader-exit-stream', 'it waits out the grace period'],
  ['termination.settings', 'it waits out the grace period'],
  ['teardown.after-caller-abort', 'it waits out the grace period'],
  ['teardown.timeout-stream', "it waits for the command's timeout"],
  ['teardown.timeout-run', "it waits for the command's timeout"],
  ['process.kill-stop-cont', "it watches heartbeats over the sandbox's own sleeps"],
  ['teardown.dispose', "it watches the heartbeat stop over a sleep of the sandbox's clock"],
  ['teardown.dispose-never-iterated', "it watches the heartbeat stop over a sleep of the sandbox's clock"],
  ['teardown.break', "it watches the heartbeat stop over a sleep of the sandbox's clock"],
  ['teardown.throw', "it watches the heartbeat stop over a sleep of the sandbox's clock"],
  ['teardown.return', "it watches the heartbeat stop over a sleep of the sandbox's clock"],
  ['teardown.abort-stream', "it watches the heartbeat stop over a sleep of the sandbox's clock"],
]);

/** How many waiting cases overlap at most, beside the others, on a local backend. */
export const WAITING_CONCURRENCY = 8;

/** Why `testCase` must run alone, or undefined when it may run beside others. */
export function runsAlone(testCase: ConformanceCase): string | undefined {
  return testCase.runsAlone || RUNS_ALONE.get(testCase.id);
}

/** How a run lays out its cases: `concurrency: 'auto'` chooses it from the measured round trip and CPU. */
export interface SchedulePlan {
  /** How many cases that neither wait nor run alone run at once. */
  readonly concurrency: number;
  /**
   * Whether the cases of {@link WAITS} overlap the others, at most
   * {@link WAITING_CONCURRENCY} of them at once, those that would run alone
   * included. Only on a local backend under `'auto'`.
   */
  readonly overlapWaiting: boolean;
  /** Why, in a sentence for the report: what was chosen, from what the kit measured. */
  readonly reason: string;
  /** What `'auto'` measured before the first case and chose from; absent under an explicit concurrency. */
  readonly measured?: { readonly roundTripMs?: number; readonly cpu?: CommandCpu };
}

/** The plan for `concurrency`: 'auto' overlaps waiting cases on a local backend only. */
export function schedulePlan(concurrency: number | 'auto', roundTripMs: number | undefined, cpu?: CommandCpu): SchedulePlan {
  if (concurrency !== 'auto') return { concurrency, overlapWaiting: false, reason: `${concurrency} case${concurrency === 1 ? '' : 's'} at a time, as the concurrency option says` };
  const shared = autoConcurrency(roundTripMs, cpu);
  const local = roundTripMs === undefined || roundTripMs < LOCAL_ROUND_TRIP_MS;
  const measured = `${roundTripMs === undefined ? 'no round trip measured' : `a round trip of ${Math.round(roundTripMs)} ms`}${
    cpu === undefined ? '' : `, ${cpu.commandCores.toFixed(2)} cores busy with the trivial commands and ${cpu.idleCores.toFixed(2)} idle`
  }`;
  const reason = local
    ? `one case at a time, with the cases that only wait beside them (${measured}: a local backend)`
    : shared === 1
      ? `one case at a time (${measured}: no spare CPU for a second case)`
      : `${shared} cases at a time (${measured})`;
  return { concurrency: shared, overlapWaiting: local, reason, measured: { ...(roundTripMs === undefined ? {} : { roundTripMs }), ...(cpu === undefined ? {} : { cpu }) } };
}

/** Whether `testCase` runs with nothing beside it under `plan`. */
export function aloneUnder(plan: SchedulePlan, testCase: ConformanceCase): boolean {
  return runsAlone(testCase) !== undefined && !(plan.overlapWaiting && WAITS.has(testCase.id));
}

/** Whether `testCase` runs in the lane of waiting cases under `plan`. */
export function waitsUnder(plan: SchedulePlan, testCase: ConformanceCase): boolean {
  return plan.overlapWaiting && WAITS.has(testCase.id);
}

/**
 * Lets a running task give its slot to the next item while it goes on: the
 * engine calls it for a case that only waits (`stall.ts`), so that cases
 * that wait on a broken adapter's timers wait side by side (ADR-0051).
 */
export type Release = () => void;

/** A pool's progress: `quiet` once every item has started and each running task has freed its slot; `done` once all have settled. */
interface PoolRun {
  readonly quiet: Promise<void>;
  readonly done: Promise<void>;
}

/** The freed slots that pools share: at most `spare()` tasks of them hold one at once. */
interface FreedSlots {
  readonly spare: () => number;
  held: number;
}

/**
 * Runs `task` for each of `items`, at most `concurrency` at a time, in list
 * order. A task that calls its {@link Release} frees its slot for the next
 * item while it goes on, while `freed` has one to spare.
 */
function pool<T>(items: readonly T[], concurrency: number, task: (item: T, release: Release) => Promise<void>, freed: FreedSlots): PoolRun {
  // A worker started by a release is started in the pool's own context, not in the releasing task's
  // (the kit attributes faults and warnings by async context: faults.ts).
  const outside = AsyncLocalStorage.snapshot();
  let next = 0;
  // Tasks running that have not freed their slot.
  let holding = 0;
  let onQuiet!: () => void;
  const quiet = new Promise<void>((resolve) => (onQuiet = resolve));
  const checkQuiet = (): void => {
    if (next >= items.length && holding === 0) onQuiet();
  };
  const workers: Array<Promise<void>> = [];
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      let gaveUp = false;
      holding++;
      await task(items[next++]!, () => {
        if (gaveUp || freed.held >= freed.spare()) return;
        gaveUp = true;
        freed.held++;
        holding--;
        if (next < items.length) workers.push(outside(worker));
        checkQuiet();
      });
      if (gaveUp) {
        // Its slot went on with the worker started for it.
        freed.held--;
        return;
      }
      holding--;
    }
    checkQuiet();
  };
  for (let i = 0; i < Math.min(concurrency, items.length); i++) workers.push(worker());
  checkQuiet();
  const done = (async () => {
    // Workers started by a release join the list while it is awaited.
    for (let i = 0; i < workers.length; i++) await workers[i];
  })();
  return { quiet, done };
}

/** How tasks free their slots ({@link Release}). */
export interface Freeing {
  /** How many tasks, of the shared and waiting items together, may hold a freed slot at once (asked at each release). */
  readonly spare: () => number;
  /**
   * Asked once every shared and waiting item has started and each still
   * running has freed its slot: whether the solo items may start now, beside
   * those that only wait, instead of after they end.
   */
  readonly soloEarly: () => boolean;
}

/**
 * Runs `task` for each item: first every item that may share the machine,
 * at most `concurrency` at a time, taken in order of the list, and beside
 * them the items for which `waits` holds, at most `waiting` at a time, those
 * that would run alone first (they wait longest); then, one by one with
 * nothing beside them, the items for which `alone` holds. Grouping the solo
 * items at the end keeps a long shared item from leaving the other slots
 * idle at every solo item it would otherwise have to wait for. A shared or
 * waiting task may free its slot ({@link Release}), at most `freeing.spare`
 * of them at once; a solo one cannot. Resolves when every task has settled;
 * tasks must not reject.
 */
export async function runScheduled<T>(
  items: readonly T[],
  concurrency: number,
  alone: (item: T) => boolean,
  task: (item: T, release: Release) => Promise<void>,
  overlap: { readonly waits: (item: T) => boolean; readonly longest: (item: T) => boolean; readonly waiting: number } = {
    waits: () => false,
    longest: () => false,
    waiting: 0,
  },
  freeing: Freeing = { spare: () => 0, soloEarly: () => false },
): Promise<void> {
  const waiting = items.filter((item) => !alone(item) && overlap.waits(item));
  const ordered = [...waiting.filter(overlap.longest), ...waiting.filter((item) => !overlap.longest(item))];
  const shared = items.filter((item) => !alone(item) && !overlap.waits(item));
  const freed: FreedSlots = { spare: freeing.spare, held: 0 };
  const first = [pool(ordered, overlap.waiting, task, freed), pool(shared, concurrency, task, freed)];
  await Promise.all(first.map((run) => run.quiet));
  // Those still running only wait; unless the solo items may start beside them, they wait for them too.
  if (!freeing.soloEarly()) await Promise.all(first.map((run) => run.done));
  const solo = pool(items.filter(alone), 1, task, { spare: () => 0, held: 0 });
  await Promise.all([...first.map((run) => run.done), solo.done]);
}
