import {
  CAPABILITIES,
  hasCapability,
  InvalidArgument,
  validatorFor,
  type CapabilityManifest,
  type CaseResult,
  type CaseStatus,
  type ConformanceReport,
  type Sandbox,
  type SandboxFactory,
} from '@sandstream/types';
import { ConformanceFailure, describeError, flattenSuppressed, HarnessError } from './assert.js';
import type { ConformanceCase } from './case.js';
import { CASES } from './cases/index.js';
import { createContext, type ContextHandle } from './context.js';
import { checkHooks, type ConformanceHooks } from './hooks.js';
import { missingTools, sweep } from './probes.js';
import { REQUIREMENTS } from './requirements.js';
import { autoConcurrency, runsAlone, runScheduled } from './schedule.js';
import { checkSelectors, deselected } from './select.js';
import { describeTermination, terminationOf, type Termination } from './termination.js';
import { KIT_SPEC_VERSION, KIT_VERSION } from './version.js';

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** Returns a fresh, isolated sandbox on every call. */
  readonly factory: SandboxFactory;
  /** The adapter module's lifecycle and observation hooks (its `conformanceHooks` export). */
  readonly hooks?: ConformanceHooks;
  /** Run only cases matching one of these (id, `prefix.*`, or requirement id). */
  readonly include?: readonly string[];
  /** Report cases matching one of these as `disabled`. */
  readonly exclude?: readonly string[];
  /** Case ids the adapter is known to fail; a listed case that passes makes the run fail as stale. */
  readonly expectedFailures?: readonly string[];
  /** Per-case time limit in ms (default 20000); a hung case fails instead of hanging the run. */
  readonly caseTimeoutMs?: number;
  /**
   * The grace period for a sandbox that does not state its own `termination`
   * (a 1.0 adapter). The kit reads a sandbox's `termination`; a value here
   * that contradicts it is a harness error.
   */
  readonly graceMs?: number;
  /**
   * How many independent cases run at once, each on its own sandbox; cases
   * that must run alone still do. `'auto'` (the default): 1 on a backend
   * whose round trip is under 30 ms (local), 4 on a slower one (ADR-0029).
   */
  readonly concurrency?: number | 'auto';
  /** Called as each case starts and ends, for live progress. */
  readonly onCaseStart?: (testCase: ConformanceCase) => void;
  readonly onCaseEnd?: (result: CaseResult) => void;
}

/** Options renamed or removed, with what replaces them: they fail loudly instead of being ignored. */
const RENAMED_OPTIONS: Readonly<Record<string, string>> = {
  only: 'renamed to `include`',
};

const KNOWN_OPTIONS = new Set([
  'factory',
  'hooks',
  'include',
  'exclude',
  'expectedFailures',
  'caseTimeoutMs',
  'graceMs',
  'concurrency',
  'onCaseStart',
  'onCaseEnd',
]);

/** The longest delay setTimeout honours (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

const SHOULD = new Set(REQUIREMENTS.filter((r) => r.level === 'SHOULD').map((r) => r.id));

/** Whether a case proves only SHOULD-level requirements, so its failure does not fail the run. */
export function isAdvisory(testCase: Pick<ConformanceCase, 'requirements'>): boolean {
  return testCase.requirements.every((id) => SHOULD.has(id));
}

/** The options every entry point shares, checked and with defaults applied. */
export interface CheckedOptions {
  readonly caseTimeoutMs: number;
  /** Only for sandboxes that state no `termination`. */
  readonly graceMs: number | undefined;
  readonly concurrency: number | 'auto';
  readonly hooks: ConformanceHooks;
}

/** Checks the options shared by every entry point; throws InvalidArgument naming the first bad one. */
export function validateOptions(options: ConformanceOptions): CheckedOptions {
  for (const key of Object.keys(options)) {
    if (key in RENAMED_OPTIONS) throw new InvalidArgument(`options.${key}`, RENAMED_OPTIONS[key]!);
    // Old or misspelt options must fail loudly rather than be ignored.
    if (!KNOWN_OPTIONS.has(key)) throw new InvalidArgument(`options.${key}`, 'unknown option');
  }
  if (typeof options.factory !== 'function') throw new InvalidArgument('options.factory', 'must be a function returning a Sandbox');
  const caseTimeoutMs = options.caseTimeoutMs ?? 20_000;
  const graceMs = options.graceMs;
  const concurrency = options.concurrency ?? 'auto';
  if (!Number.isFinite(caseTimeoutMs) || caseTimeoutMs <= 0 || caseTimeoutMs > MAX_TIMER_MS) {
    throw new InvalidArgument('options.caseTimeoutMs', `must be a positive number of at most ${MAX_TIMER_MS}`);
  }
  if (graceMs !== undefined) {
    if (graceMs > MAX_TIMER_MS) throw new InvalidArgument('options.graceMs', `must be at most ${MAX_TIMER_MS}`);
    if (!Number.isFinite(graceMs) || graceMs < 0) throw new InvalidArgument('options.graceMs', 'must be a non-negative number');
  }
  if (concurrency !== 'auto' && (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64)) {
    throw new InvalidArgument('options.concurrency', "must be 'auto' or an integer from 1 to 64");
  }
  const hooks = checkHooks(options.hooks, 'options.hooks');
  checkSelectors(CASES, options.include ?? [], 'options.include');
  checkSelectors(CASES, options.exclude ?? [], 'options.exclude');
  return { caseTimeoutMs, graceMs, concurrency, hooks };
}

function isSandbox(value: unknown): value is Sandbox {
  const sb = value as Partial<Sandbox> | null;
  return typeof sb === 'object' && sb !== null && typeof sb.run === 'function' && typeof sb.stream === 'function' && typeof sb.close === 'function' && typeof sb.capabilities === 'object';
}

async function createSandbox(factory: SandboxFactory): Promise<Sandbox> {
  let sandbox: unknown;
  try {
    sandbox = await factory();
  } catch (error) {
    throw new HarnessError(`the factory failed: ${describeError(error)}`);
  }
  if (!isSandbox(sandbox)) throw new HarnessError('the factory did not return a Sandbox');
  return sandbox;
}

/** Why a case does not apply to an adapter with this manifest, if it does not. */
export function skipReason(testCase: ConformanceCase, manifest: CapabilityManifest): string | undefined {
  for (const capability of testCase.needs ?? []) {
    if (!hasCapability(manifest, capability)) return `the adapter does not advertise "${capability}"; the negative case capabilities.absent-${capability} runs instead`;
  }
  if (testCase.without !== undefined && hasCapability(manifest, testCase.without)) {
    return `the adapter advertises "${testCase.without}"; this case checks its absence`;
  }
  return undefined;
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

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

class CaseTimeout extends Error {}

/** One case's run, as {@link runCase} takes it. */
export interface CaseRun {
  readonly testCase: ConformanceCase;
  readonly manifest: CapabilityManifest;
  readonly factory: SandboxFactory;
  readonly timeoutMs: number;
  /** The grace period for a sandbox that states no `termination` (see {@link ConformanceOptions.graceMs}). */
  readonly graceMs?: number | undefined;
  /** The adapter module's hooks; `attach` is used to observe a sandbox after its close(). */
  readonly hooks?: ConformanceHooks | undefined;
}

/** A case's outcome. */
export interface CaseOutcome {
  status: CaseStatus;
  message?: string;
  durationMs: number;
}

/**
 * The status and message of what a case threw. A `SuppressedError` (an
 * `await using` whose disposal failed while an error propagated) is
 * unpacked: every error in it is shown, and it is the harness's only when
 * all of them are.
 */
export function classify(error: unknown): { status: CaseStatus; message: string; timedOut: boolean } {
  const parts = flattenSuppressed(error);
  const describe = (part: unknown): string =>
    part instanceof HarnessError || part instanceof ConformanceFailure || part instanceof CaseTimeout ? part.message : `unexpected ${describeError(part)}`;
  const message = parts.map(describe).join('; then, while disposing, ');
  const timedOut = parts.some((part) => part instanceof CaseTimeout);
  const harness = parts.every((part) => part instanceof HarnessError);
  return { status: harness ? 'error' : 'fail', message, timedOut };
}

/** Runs one case on a fresh sandbox; never throws. */
export async function runCase(run: CaseRun): Promise<CaseOutcome> {
  const { testCase, factory } = run;
  const hooks = run.hooks ?? {};
  const started = performance.now();
  const done = (status: CaseStatus, message?: string): CaseOutcome => ({
    status,
    durationMs: Math.round((performance.now() - started) * 10) / 10,
    ...(message === undefined ? {} : { message }),
  });
  const reason = skipReason(testCase, run.manifest);
  if (reason !== undefined) return done('skipped', reason);

  // A case that moves a lot of data declares a longer limit of its own; the larger one applies.
  const timeoutMs = Math.max(testCase.timeoutMs ?? 0, run.timeoutMs);
  const controller = new AbortController();
  let creating: Promise<Sandbox> | undefined;
  let sandbox: Sandbox | undefined;
  let handle: ContextHandle | undefined;
  let termination: Termination | undefined;
  let outcome: CaseOutcome;
  let timedOut = false;
  try {
    await withTimeout(
      (async () => {
        creating = createSandbox(factory);
        sandbox = await creating;
        // The case may have timed out while the factory was slow: start nothing.
        if (controller.signal.aborted) return;
        termination = terminationOf(sandbox, { graceMs: run.graceMs, label: 'the graceMs option (--grace-ms)' });
        handle = createContext(sandbox, { factory, termination, signal: controller.signal, hooks });
        await testCase.run(handle.ctx);
      })(),
      timeoutMs,
      () => new CaseTimeout(`did not finish within ${timeoutMs} ms: the adapter hung (or the case needs a longer caseTimeoutMs)`),
    );
    outcome = done('pass');
  } catch (error) {
    const verdict = classify(error);
    timedOut = verdict.timedOut;
    // A failure that depends on the grace period says which one the kit used, and where it came from.
    const settings = verdict.status === 'fail' && handle?.usedTermination() && termination ? ` [${describeTermination(termination)}]` : '';
    outcome = done(verdict.status, `${verdict.message}${settings}`);
  }
  controller.abort(new CaseTimeout('case ended'));
  if (sandbox === undefined) {
    // The factory is still working: close what it eventually returns.
    void creating?.then((late) => late.close()).catch(() => undefined);
    return outcome;
  }
  const failed = outcome.status !== 'pass';
  // Scratch files go through the sandbox, on a short budget of their own
  // (shorter still after a hang), so that a stuck run() cannot keep close()
  // from being called.
  if (handle !== undefined) {
    await withTimeout(handle.cleanup(), timedOut ? 1_000 : 5_000, () => new CaseTimeout('cleanup hung')).catch(() => undefined);
  }
  // After a failure, what the case started is killed through a second handle on the environment.
  const tokens = failed ? (handle?.tokens() ?? []) : [];
  const attaching = tokens.length > 0 && hooks.attach !== undefined ? attachBounded(hooks, sandbox) : undefined;
  // Closing terminates what the case left running: at most one grace period and kill wait.
  const settings = termination ?? { graceMs: run.graceMs ?? 2_000, killWaitMs: 5_000 };
  const closeBudget = settings.graceMs + settings.killWaitMs + 5_000;
  const closed = await withTimeout(
    sandbox.close().then(() => undefined, (error: unknown) => describeError(error)),
    closeBudget,
    () => new CaseTimeout('close() hung'),
  ).catch(() => `did not resolve within ${closeBudget} ms`);
  if (closed !== undefined && outcome.status === 'pass') {
    // A sandbox that cannot be closed leaks what it runs (SS-TEAR-5).
    return done('fail', `Sandbox.close() after the case failed: ${closed}`);
  }
  if (tokens.length > 0) {
    const note = await sweepAfter(factory, attaching, tokens);
    if (note !== undefined) outcome = { ...outcome, message: `${outcome.message ?? ''} (${note})` };
  }
  return outcome;
}

async function attachBounded(hooks: ConformanceHooks, sandbox: Sandbox): Promise<Sandbox | undefined> {
  try {
    return await withTimeout(Promise.resolve(hooks.attach!(sandbox)), 10_000, () => new Error('attach() hung'));
  } catch {
    return undefined;
  }
}

/**
 * Kills, best effort, the processes a failed case left running: those
 * carrying one of its tokens, seen through the attached observer or a fresh
 * sandbox. Returns what the report should say, if anything.
 */
async function sweepAfter(factory: SandboxFactory, attaching: Promise<Sandbox | undefined> | undefined, tokens: readonly string[]): Promise<string | undefined> {
  const observer = await attaching;
  let via: Sandbox | undefined = observer;
  try {
    via ??= await withTimeout(createSandbox(factory), 10_000, () => new Error('the factory hung'));
    const killed = await withTimeout(sweep(via, tokens), 30_000, () => new Error('the sweep hung'));
    if (killed.length === 0) return undefined;
    const how = observer === undefined ? 'a fresh sandbox' : 'a handle from the attach hook';
    return `after the case, the kit had to kill ${killed.length} process${killed.length === 1 ? '' : 'es'} it had left running (pid ${killed.join(', ')}), through ${how}`;
  } catch {
    // Best effort: a sandbox that cannot run the sweep (no /proc, a broken run()) is left as it is.
    return undefined;
  } finally {
    if (via !== undefined) await withTimeout(via.close(), 10_000, () => new Error('close() hung')).catch(() => undefined);
  }
}

/** The fastest of a few runs of a trivial command: the backend's round trip, with the machine's load mostly left out. */
async function roundTrip(sandbox: Sandbox): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await sandbox.run(['true'], { timeout: 10_000 });
    times.push(performance.now() - started);
  }
  return Math.min(...times);
}

/** The adapter as a fresh sandbox shows it, or why the run cannot go on. */
async function probeAdapter(
  factory: SandboxFactory,
  timeoutMs: number,
): Promise<{ name: string; manifest: CapabilityManifest; problem?: string; roundTripMs?: number }> {
  const probe = await withTimeout(createSandbox(factory), timeoutMs, () => new HarnessError('the factory hung'));
  const name = typeof probe.name === 'string' && probe.name !== '' ? probe.name : 'unnamed';
  const manifest = manifestForReport(probe.capabilities);
  try {
    // A run() that hangs is the adapter's failure, for the cases to report; only a missing tool stops the run.
    const missing = await withTimeout(missingTools(probe), timeoutMs, () => new Error('hung')).catch(() => undefined);
    if (missing !== undefined) return { name, manifest, problem: missing };
    const roundTripMs = await withTimeout(roundTrip(probe), timeoutMs, () => new Error('hung')).catch(() => undefined);
    return { name, manifest, ...(roundTripMs === undefined ? {} : { roundTripMs }) };
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
 * @example
 * ```ts
 * import { runConformance } from '@sandstream/conformance';
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * const report = await runConformance({ factory: () => createLocalSandbox() });
 * console.log(report.ok ? 'conforms' : 'does not conform');
 * ```
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const { caseTimeoutMs, graceMs, concurrency, hooks } = validateOptions(options);
  const startedAt = new Date();
  const started = performance.now();
  const expected = new Set(options.expectedFailures ?? []);

  let adapterName = 'unknown';
  let manifest: CapabilityManifest = { streaming: false, stdin: false, 'resource-limits': false, user: false };
  let harnessProblem: string | undefined;
  let roundTripMs: number | undefined;
  const results = new Array<CaseResult>(CASES.length);
  let teardownProblem: string | undefined;
  try {
    try {
      await hooks.setup?.();
    } catch (error) {
      harnessProblem = `the adapter module's setup hook failed: ${describeError(error)}`;
    }
    if (harnessProblem === undefined) {
      try {
        const probe = await probeAdapter(options.factory, caseTimeoutMs);
        adapterName = probe.name;
        manifest = probe.manifest;
        harnessProblem = probe.problem;
        roundTripMs = probe.roundTripMs;
      } catch (error) {
        harnessProblem = error instanceof HarnessError ? error.message : describeError(error);
      }
    }

    const finish = (index: number, testCase: ConformanceCase, outcome: CaseOutcome): void => {
      const result: CaseResult = {
        id: testCase.id,
        title: testCase.title,
        requirements: [...testCase.requirements],
        ...outcome,
        expectedFailure: outcome.status === 'fail' && expected.has(testCase.id),
      };
      if (outcome.status === 'fail' && isAdvisory(testCase)) result.message = `advisory (SHOULD): ${outcome.message ?? ''}`;
      results[index] = result;
      options.onCaseEnd?.(result);
    };
    const indexed = CASES.map((testCase, index) => ({ testCase, index }));
    await runScheduled(
      indexed,
      concurrency === 'auto' ? autoConcurrency(roundTripMs) : concurrency,
      ({ testCase }) => runsAlone(testCase) !== undefined,
      async ({ testCase, index }) => {
        const left = deselected(testCase, options);
        if (left !== undefined) return finish(index, testCase, { status: 'disabled', message: left, durationMs: 0 });
        if (harnessProblem !== undefined) return finish(index, testCase, { status: 'error', message: harnessProblem, durationMs: 0 });
        options.onCaseStart?.(testCase);
        finish(index, testCase, await runCase({ testCase, manifest, factory: options.factory, timeoutMs: caseTimeoutMs, graceMs, hooks }));
      },
    );
  } finally {
    try {
      await hooks.teardown?.();
    } catch (error) {
      teardownProblem = `the adapter module's teardown hook failed: ${describeError(error)}`;
    }
  }

  const cases = results;
  const count = (status: CaseStatus): number => cases.filter((c) => c.status === status).length;
  // Stale: the listed case passes now, or no longer exists. The list must shrink as the adapter improves.
  const stale = [...expected].filter((id) => {
    const entry = cases.find((c) => c.id === id);
    return entry === undefined || entry.status === 'pass';
  });
  const blocking = cases.filter((c) => (c.status === 'fail' && !c.expectedFailure && !isAdvisory(c)) || c.status === 'error');
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
  if (teardownProblem !== undefined) throw Object.assign(new HarnessError(teardownProblem), { report });
  return report;
}

export { CASES };
