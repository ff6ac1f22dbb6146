import {
  CAPABILITIES,
  hasCapability,
  validatorFor,
  type CapabilityManifest,
  type CaseResult,
  type CaseStatus,
  type ConformanceReport,
  type Sandbox,
  type SandboxFactory,
} from '@sandstream/types';
import { describeError, HarnessError } from './assert.js';
import type { ConformanceCase } from './case.js';
import { CASES } from './cases/index.js';
import { validateOptions, type ConformanceOptions } from './options.js';
import { missingTools } from './sandbox-scripts.js';
import { REQUIREMENTS } from './requirements.js';
import { createSandbox, runCaseWatched, withTimeout, type CaseOutcome } from './run-case.js';
import { describeFault, FAULT_ADVICE, inPhaseScope, watchRun, type Fault, type RunWatch } from './faults.js';
import { watchWarnings } from './warnings.js';
import { LOCAL_ROUND_TRIP_MS, schedulePlan } from './schedule.js';
import { measureCommandCpu, type CommandCpu } from './machine-cpu.js';
import { runCases } from './run-cases.js';
import { deselected } from './select.js';
import { KIT_SPEC_VERSION, KIT_VERSION } from './version.js';
import { CANNOT_CROSS, connectTestee } from './testee/connect.js';
import type { OwnerLauncher } from './owner-launcher.js';
import { endLeftovers, leftoverNote, RunMarks } from './leftovers.js';

export { validateOptions, type CheckedOptions, type ConformanceOptions } from './options.js';
export { classify, runCase, skipReason, type CaseOutcome, type CaseRun } from './run-case.js';

const SHOULD = new Set(REQUIREMENTS.filter((r) => r.level === 'SHOULD').map((r) => r.id));

/** Whether a case proves only SHOULD-level requirements, so its failure does not fail the run. */
export function isAdvisory(testCase: Pick<ConformanceCase, 'requirements'>): boolean {
  return testCase.requirements.every((id) => SHOULD.has(id));
}

/**
 * Whether a case's outcome alone makes the run fail: an error, or a failure
 * neither listed as expected nor advisory. The one place this is decided;
 * the report carries it as `CaseResult.blocking`, and the reporters read it.
 */
export function isBlocking(outcome: { readonly status: CaseStatus; readonly expectedFailure?: boolean }, testCase: Pick<ConformanceCase, 'requirements'>): boolean {
  return outcome.status === 'error' || (outcome.status === 'fail' && outcome.expectedFailure !== true && !isAdvisory(testCase));
}

/**
 * The manifest as the report can state it: each spec capability `true` only
 * when the adapter says exactly `true`, plus well-formed `x-` extensions.
 * Whether the adapter's own manifest is valid is the `capabilities.manifest`
 * case's verdict; the report must stay valid either way.
 */
export function manifestForReport(raw: unknown): CapabilityManifest {
  const source = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const manifest: Record<string, boolean> = {};
  // An optional capability left out has its default (binary-output: true).
  for (const capability of CAPABILITIES) manifest[capability] = source[capability] === undefined ? hasCapability({}, capability) : source[capability] === true;
  for (const [key, value] of Object.entries(source)) {
    if (/^x-[a-z0-9-]+$/.test(key) && typeof value === 'boolean') manifest[key] = value;
  }
  return manifest as CapabilityManifest;
}

/**
 * Trivial commands timed one after another, at least five and for at least
 * this long, so that the machine's CPU counters (10 ms ticks) see enough of
 * them (machine-cpu.ts).
 */
const PROBE_WINDOW_MS = 250;

/**
 * The fastest of a few runs of a trivial command: the backend's round trip,
 * with the machine's load mostly left out. With `windowMs`, the runs go on
 * for at least that long. Through run() only: a Process the probe made and
 * disposed could raise faults of a broken adapter outside every case, before
 * the first.
 */
async function roundTrip(sandbox: Sandbox, windowMs = 0): Promise<number> {
  const times: number[] = [];
  const since = performance.now();
  for (let i = 0; i < 50 && (i < 5 || performance.now() - since < windowMs); i++) {
    const started = performance.now();
    await sandbox.run(['true'], { timeout: 10_000 });
    times.push(performance.now() - started);
  }
  return Math.min(...times);
}

/**
 * The adapter as a fresh sandbox shows it, or why the run cannot go on.
 * The machine's CPU is measured only where it can change the plan
 * (`measureCpu`): under `'auto'`, with more than one case to run, on a
 * backend whose first round trips are not already those of a local one
 * (more runs can only lower the fastest). Elsewhere a few runs give the
 * round trip, and a run of one case starts without a second of measuring.
 */
async function probeAdapter(
  factory: SandboxFactory,
  timeoutMs: number,
  measureCpu: boolean,
): Promise<{ name: string; manifest: CapabilityManifest; problem?: string; roundTripMs?: number; cpu?: CommandCpu }> {
  const probe = await withTimeout(createSandbox(factory), timeoutMs, () => new HarnessError('the factory hung'));
  const name = typeof probe.name === 'string' && probe.name !== '' ? probe.name : 'unnamed';
  const manifest = manifestForReport(probe.capabilities);
  try {
    // A run() that hangs is the adapter's failure, for the cases to report; only a missing tool stops the run.
    const missing = await withTimeout(missingTools(probe), timeoutMs, () => new Error('hung')).catch(() => undefined);
    if (missing !== undefined) return { name, manifest, problem: missing };
    const timed = (windowMs: number) => withTimeout(roundTrip(probe, windowMs), timeoutMs, () => new Error('hung')).catch(() => undefined);
    let roundTripMs = await timed(0);
    if (!measureCpu || roundTripMs === undefined || roundTripMs < LOCAL_ROUND_TRIP_MS) return { name, manifest, ...(roundTripMs === undefined ? {} : { roundTripMs }) };
    // What the trivial commands cost this machine's CPU decides how many cases 'auto' runs at once (machine-cpu.ts).
    const cpu = await measureCommandCpu(async () => {
      const measured = await timed(PROBE_WINDOW_MS);
      // Measured once per CPU reading: the fastest of all is the round trip.
      roundTripMs = measured === undefined ? roundTripMs : Math.min(measured, roundTripMs ?? measured);
    });
    return { name, manifest, ...(roundTripMs === undefined ? {} : { roundTripMs }), ...(cpu === undefined || roundTripMs === undefined ? {} : { cpu }) };
  } finally {
    await withTimeout(probe.close(), 20_000, () => new HarnessError('close() of a fresh, unused sandbox hung'));
  }
}

/**
 * Runs the conformance kit against an adapter and returns its report,
 * validated against the spec's ConformanceReport schema. Never depends on
 * a test framework. The `setup` hook runs before the first case and
 * `teardown` after the last; a teardown that throws makes this reject with
 * a HarnessError that carries the report as `report`.
 *
 * While it runs, the kit holds the process's `uncaughtException`,
 * `unhandledRejection` and `warning` events (and gives them back after):
 * what the adapter throws where no caller can catch it fails the case that
 * was running (a fault outside every case rejects, after the run, with a
 * HarnessError carrying the report), and a warning a case provokes on
 * purpose is not passed on (see `onWarning`).
 *
 * @example
 * ```ts
 * import { runConformance } from '@sandstream/conformance';
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * const report = await runConformance({ factory: () => createLocalSandbox() });
 * console.log(report.ok ? 'conforms' : 'does not conform');
 * ```
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const { caseTimeoutMs } = validateOptions(options);
  // The hello is the setup hook and a first sandbox: bounded like the probe of a direct run, with room.
  const testee = options.testee === undefined ? undefined : await connectTestee(options.testee, 3 * caseTimeoutMs);
  const faults = watchFaults(options);
  try {
    if (testee === undefined) return await runWatched(options, faults);
    const { testee: _command, ...rest } = options;
    return await runWatched({ ...rest, factory: testee.factory, hooks: testee.hooks }, faults, { cannotCross: CANNOT_CROSS, linkProblem: () => testee.link.fatal, launchOwner: testee.launchOwner });
  } finally {
    // The link first: what the testee raises while it closes its sandboxes is still watched.
    try {
      await testee?.link.close();
    } finally {
      faults.release();
    }
  }
}

/** What a run through a testee adds (ADR-0038). */
interface TesteeRun {
  /** Cases reported `skipped`, with the reason, because they cannot run through a testee. */
  readonly cannotCross: Readonly<Record<string, string>>;
  /** The fault of the link to the testee, if one happened: a harness error of the whole run. */
  readonly linkProblem: () => string | undefined;
  /** How an owner process is started and crashed: a second instance of the testee. */
  readonly launchOwner: OwnerLauncher;
}

/**
 * The run's side of faults and warnings (`faults.ts`, `warnings.ts`): a
 * fault a case raises after its outcome amends that case's result (and
 * `onCaseEnd` is called again with it); one raised outside every case is
 * kept, with what the kit was doing, for a harness error after the report.
 */
function watchFaults(options: ConformanceOptions) {
  const outside: string[] = [];
  let phase = 'the setup hook';
  let amend: (id: string, fault: Fault) => boolean = () => false;
  const watch: RunWatch = {
    fault(fault, late) {
      if (late !== undefined && amend(late.label, fault)) return;
      const when = late === undefined ? `during ${phase}` : late.phase ? `from the work of ${late.label}` : `after the case ${late.label} ended`;
      outside.push(`${describeFault(fault)} (${when})`);
    },
  };
  const releaseFaults = watchRun(watch);
  const releaseWarnings = watchWarnings(watch, (event) => {
    options.onWarning?.(event);
    return options.onWarning !== undefined;
  });
  return {
    watch,
    outside,
    setPhase(now: string): void {
      phase = now;
    },
    onLate(handler: (id: string, fault: Fault) => boolean): void {
      amend = handler;
    },
    release(): void {
      releaseWarnings();
      releaseFaults();
    },
  };
}

async function runWatched(options: ConformanceOptions, faults: ReturnType<typeof watchFaults>, testee?: TesteeRun): Promise<ConformanceReport> {
  const factory = options.factory!;
  const { caseTimeoutMs, graceMs, concurrency, hooks, ownerModule } = validateOptions(options);
  const startedAt = new Date();
  const started = performance.now();
  const expected = new Set(options.expectedFailures ?? []);

  let adapterName = 'unknown';
  let manifest: CapabilityManifest = { streaming: false, stdin: false, 'resource-limits': false, user: false };
  let harnessProblem: string | undefined;
  let roundTripMs: number | undefined;
  let cpu: CommandCpu | undefined;
  const results = new Array<CaseResult>(CASES.length);
  const marks = new RunMarks();
  let runProblem: string | undefined;
  // Once a case has failed the run, under 'auto', a case that only waits frees its slot sooner (stall.ts).
  let verdictKnown = false;
  try {
    try {
      await inPhaseScope('the setup hook', faults.watch, async () => hooks.setup?.());
    } catch (error) {
      harnessProblem = `the adapter module's setup hook failed: ${describeError(error)}`;
    }
    if (harnessProblem === undefined) {
      faults.setPhase('the probe of the adapter, before the first case');
      try {
        // Only 'auto' chooses from the CPU, and only between cases that could run side by side.
        const measureCpu = concurrency === 'auto' && CASES.filter((c) => deselected(c, options) === undefined).length > 1;
        const probe = await inPhaseScope('the probe of the adapter, before the first case', faults.watch, () => probeAdapter(factory, caseTimeoutMs, measureCpu));
        adapterName = probe.name;
        manifest = probe.manifest;
        harnessProblem = probe.problem;
        roundTripMs = probe.roundTripMs;
        cpu = probe.cpu;
      } catch (error) {
        harnessProblem = error instanceof HarnessError ? error.message : describeError(error);
      }
    }

    // Faults raised late by the first run of a case that waits for its second (run-cases.ts), applied when it ends.
    const lateFaults = new Map<number, Fault[]>();
    const amend = (index: number, result: CaseResult, fault: Fault): CaseResult => {
      const late = `after the case ended, the adapter raised an ${describeFault(fault)}, where no caller could catch it; ${FAULT_ADVICE}`;
      // A harness error stays one; anything else is now the adapter's failure.
      const status: CaseStatus = result.status === 'error' ? 'error' : 'fail';
      const amended: CaseResult = { ...result, status, expectedFailure: status === 'fail' && expected.has(result.id), message: result.message === undefined ? late : `${result.message}; then, ${late}` };
      return { ...amended, blocking: isBlocking(amended, CASES[index]!) };
    };
    const finish = (index: number, testCase: ConformanceCase, outcome: CaseOutcome): void => {
      let result: CaseResult = {
        id: testCase.id,
        title: testCase.title,
        requirements: [...testCase.requirements],
        ...outcome,
        expectedFailure: outcome.status === 'fail' && expected.has(testCase.id),
      };
      result.blocking = isBlocking(result, testCase);
      if (outcome.status === 'fail' && isAdvisory(testCase)) result.message = `advisory (SHOULD): ${outcome.message ?? ''}`;
      for (const fault of lateFaults.get(index) ?? []) result = amend(index, result, fault);
      lateFaults.delete(index);
      // The adapter's own failure, not a harness error (which says nothing of the adapter).
      if (result.blocking === true && result.status === 'fail') verdictKnown = true;
      results[index] = result;
      options.onCaseEnd?.(result);
    };
    faults.onLate((id, fault) => {
      const index = CASES.findIndex((c) => c.id === id);
      const result = results[index];
      if (result === undefined) {
        const kept = lateFaults.get(index);
        if (kept === undefined) return false;
        kept.push(fault);
        return true;
      }
      results[index] = amend(index, result, fault);
      options.onCaseEnd?.(results[index]);
      return true;
    });
    faults.setPhase('the run, between cases');
    const plan = schedulePlan(concurrency, roundTripMs, cpu);
    if (harnessProblem === undefined) options.onSchedule?.(plan);
    await runCases(CASES, {
      plan,
      auto: concurrency === 'auto',
      roundTripMs,
      factory,
      caseTimeoutMs,
      notRun: (testCase) => {
        const left = deselected(testCase, options);
        if (left !== undefined) return { status: 'disabled', message: left, durationMs: 0 };
        if (harnessProblem !== undefined) return { status: 'error', message: harnessProblem, durationMs: 0 };
        const cannot = testee?.cannotCross[testCase.id];
        return cannot === undefined ? undefined : { status: 'skipped', message: `not through a testee: ${cannot}`, durationMs: 0 };
      },
      run: (testCase, timeoutMs, onLimit, stall) =>
        runCaseWatched({ testCase, manifest, factory, timeoutMs, graceMs, hooks, ownerModule, launchOwner: testee?.launchOwner, stall }, faults.watch, marks, onLimit),
      started: (testCase) => options.onCaseStart?.(testCase),
      finish,
      defer: (index) => void lateFaults.set(index, []),
      verdictKnown: () => verdictKnown,
      advisory: isAdvisory,
    });
    // Before the teardown hook, which may take away what the sweep runs on (a daemon, a connection).
    if (harnessProblem === undefined) {
      faults.setPhase('the end of the run, ending what the cases left running');
      const ended = await inPhaseScope('the end of the run, ending what the cases left running', faults.watch, () => endLeftovers(factory, marks));
      for (const [id, swept] of ended) {
        const index = CASES.findIndex((c) => c.id === id);
        const result = results[index];
        if (result === undefined) continue;
        const note = leftoverNote(swept);
        results[index] = { ...result, message: result.message === undefined ? note : `${result.message}; ${note}` };
        options.onCaseEnd?.(results[index]);
      }
    }
  } finally {
    faults.setPhase('the teardown hook');
    try {
      await inPhaseScope('the teardown hook', faults.watch, async () => hooks.teardown?.());
    } catch (error) {
      runProblem = `the adapter module's teardown hook failed: ${describeError(error)}`;
    }
  }

  const cases = results;
  const count = (status: CaseStatus): number => cases.filter((c) => c.status === status).length;
  // Stale: the listed case passes now, or no longer exists. The list must shrink as the adapter improves.
  const stale = [...expected].filter((id) => {
    const entry = cases.find((c) => c.id === id);
    return entry === undefined || entry.status === 'pass';
  });
  const blocking = cases.filter((c) => c.blocking === true);
  const report: ConformanceReport = {
    specVersion: KIT_SPEC_VERSION,
    kitVersion: KIT_VERSION,
    adapter: { name: adapterName, capabilities: manifest },
    startedAt: startedAt.toISOString(),
    durationMs: Math.round(performance.now() - started),
    summary: {
      pass: count('pass'),
      fail: count('fail'),
      skipped: count('skipped'),
      disabled: count('disabled'),
      error: count('error'),
      expectedFailures: cases.filter((c) => c.status === 'fail' && c.expectedFailure).length,
      staleExpectedFailures: stale,
    },
    ok: blocking.length === 0 && stale.length === 0,
    cases,
  };
  const validate = validatorFor<ConformanceReport>('ConformanceReport');
  if (!validate(report)) {
    throw new HarnessError(`the kit produced an invalid report: ${JSON.stringify(validate.issues)}`);
  }
  if (faults.outside.length > 0) {
    const listed = faults.outside.slice(0, 5).join('; ') + (faults.outside.length > 5 ? `; and ${faults.outside.length - 5} more` : '');
    const problem = `the adapter raised ${faults.outside.length === 1 ? 'a fault' : `${faults.outside.length} faults`} outside every case, where no caller could catch ${faults.outside.length === 1 ? 'it' : 'them'}: ${listed}; ${FAULT_ADVICE}`;
    runProblem = runProblem === undefined ? problem : `${runProblem}; ${problem}`;
  }
  const linkProblem = testee?.linkProblem();
  if (linkProblem !== undefined) {
    // Every verdict after the fault is void: the run is a harness error that names it.
    const problem = `the link to the testee failed, so the report is no verdict: ${linkProblem}`;
    runProblem = runProblem === undefined ? problem : `${runProblem}; ${problem}`;
  }
  if (runProblem !== undefined) throw Object.assign(new HarnessError(runProblem), { report });
  return report;
}

export { CASES };
