/**
 * The run's cases on their schedule (`schedule.ts`): who runs beside whom,
 * which case only waits and frees its slot (`stall.ts`), and which case at
 * its limit runs again alone (`at-limit.ts`). The engine gives each case's
 * outcome to `finish`; this module decides only when and how often a case
 * runs. See ADR-0051.
 */
import type { CaseOutcome, LimitReached } from './run-case.js';
import type { ConformanceCase } from './case.js';
import { measureSlowdown, retriedOutcome, retryFor, stillProgressing, type Contention } from './at-limit.js';
import { coresBetween, sampleCpu } from './machine-cpu.js';
import { aloneUnder, runsAlone, runScheduled, WAITING_CONCURRENCY, waitsUnder, type Release, type SchedulePlan } from './schedule.js';
import { IdleWindow, stallBounds, stallJudge } from './stall.js';
import type { SandboxFactory } from '@sandstream/types';

/** What {@link runCases} needs of the engine. */
export interface CaseRunner {
  readonly plan: SchedulePlan;
  /** Whether the concurrency was left to the kit (`'auto'`): only then do cases free their slots. */
  readonly auto: boolean;
  readonly roundTripMs: number | undefined;
  readonly factory: SandboxFactory;
  readonly caseTimeoutMs: number;
  /** Why a case is not run at all, with the outcome to report instead; undefined to run it. */
  notRun(testCase: ConformanceCase): CaseOutcome | undefined;
  /** Runs one case within `timeoutMs`, with the stall watch the schedule asks for. */
  run(testCase: ConformanceCase, timeoutMs: number, onLimit?: (reached: LimitReached) => void, stall?: { afterMs: number; onStall: (stalledMs: number, runningMs: number) => void }): Promise<CaseOutcome>;
  /** Called as a case starts its first run. */
  started(testCase: ConformanceCase): void;
  /** A case whose outcome is final. */
  finish(index: number, testCase: ConformanceCase, outcome: CaseOutcome): void;
  /** A case whose outcome waits for a second run: faults raised late by its first one are kept for it. */
  defer(index: number): void;
  /** Whether a case has failed the run: the verdict is known. */
  verdictKnown(): boolean;
  /** Whether the case's failure would not fail the run (advisory): it is not run again. */
  advisory(testCase: ConformanceCase): boolean;
}

/** One running case, for the count of what ran beside it. */
interface Running {
  /** Whether it holds a slot of its own: not a case of the waiting lane, not one that freed its slot. */
  holds: boolean;
  /** The most other slot-holding cases running at once while it ran. */
  peak: number;
}

/** Tracks what runs beside what: a case's contention is the most slot-holding cases beside it at any moment. */
class Beside {
  private readonly running = new Set<Running>();

  start(holds: boolean): Running {
    const entry: Running = { holds, peak: 0 };
    this.running.add(entry);
    this.update();
    return entry;
  }

  free(entry: Running): void {
    entry.holds = false;
  }

  end(entry: Running): void {
    this.running.delete(entry);
  }

  private update(): void {
    const holding = [...this.running].filter((r) => r.holds).length;
    for (const entry of this.running) entry.peak = Math.max(entry.peak, holding - (entry.holds ? 1 : 0));
  }
}

/** Runs every case on the plan's schedule, then the cases at their limit that earn a second run. */
export async function runCases(cases: readonly ConformanceCase[], runner: CaseRunner): Promise<void> {
  const { plan } = runner;
  const beside = new Beside();
  const atLimit: Array<{ testCase: ConformanceCase; index: number; first: CaseOutcome; reached: LimitReached; contention: Contention }> = [];
  const bounds = stallBounds(runner.roundTripMs);
  // One measure of the machine's last second for every case's judge.
  const idle = new IdleWindow();
  // Before the verdict, a case frees its slot only on a local backend, where a neighbour costs a case that only waits nothing.
  const quietRelease = plan.overlapWaiting;
  await runScheduled(
    cases.map((testCase, index) => ({ testCase, index })),
    plan.concurrency,
    ({ testCase }) => aloneUnder(plan, testCase),
    async ({ testCase, index }, release: Release) => {
      const skip = runner.notRun(testCase);
      if (skip !== undefined) return runner.finish(index, testCase, skip);
      runner.started(testCase);
      const entry = beside.start(!waitsUnder(plan, testCase));
      let reached: LimitReached | undefined;
      let idleCores: number | undefined;
      const cpuAtStart = sampleCpu();
      const onLimit = (limit: LimitReached): void => {
        reached = limit;
        const now = sampleCpu();
        if (cpuAtStart !== undefined && now !== undefined) idleCores = coresBetween(cpuAtStart, now).idle;
      };
      const judge = stallJudge(bounds, runner.verdictKnown, idle);
      const free = (): void => {
        beside.free(entry);
        release();
      };
      const onStall = (stalledMs: number, runningMs: number): void => {
        if ((quietRelease || runner.verdictKnown()) && judge(stalledMs, runningMs)) free();
      };
      const stall = runner.auto ? { afterMs: bounds.afterMs, onStall } : undefined;
      const outcome = await runner.run(testCase, runner.caseTimeoutMs, onLimit, stall).finally(() => beside.end(entry));
      if (reached !== undefined && stillProgressing(reached) && !runner.advisory(testCase)) {
        runner.defer(index);
        return void atLimit.push({ testCase, index, first: outcome, reached, contention: { beside: entry.peak, idleCores } });
      }
      runner.finish(index, testCase, outcome);
    },
    { waits: ({ testCase }) => waitsUnder(plan, testCase), longest: ({ testCase }) => runsAlone(testCase) !== undefined, waiting: WAITING_CONCURRENCY },
    // Once the run has failed, twice as many: a broken adapter's waits are timers, not work.
    { spare: () => (!runner.auto ? 0 : runner.verdictKnown() ? 2 * WAITING_CONCURRENCY : WAITING_CONCURRENCY), soloEarly: runner.verdictKnown },
  );
  // Measured once, for every case at its limit, when the first of them needs it.
  let slowdown: Promise<number> | undefined;
  const boundMs = Math.max(2_000, 20 * (runner.roundTripMs ?? 0));
  for (const { testCase, index, first, reached, contention } of atLimit) {
    if (runner.verdictKnown()) {
      // The run has failed already: a second run would only make its report later.
      runner.finish(index, testCase, { ...first, message: `${first.message ?? ''} (not run again alone: the run had already failed)` });
      continue;
    }
    const retry = await retryFor(reached, contention, () => (slowdown ??= measureSlowdown(runner.factory, runner.roundTripMs, boundMs)));
    runner.finish(index, testCase, retry === undefined ? first : retriedOutcome(first, reached, retry, await runner.run(testCase, retry.limitMs)));
  }
}
