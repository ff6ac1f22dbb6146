import {
  CAPABILITIES,
  InvalidArgument,
  validatorFor,
  type CapabilityManifest,
  type CaseResult,
  type CaseStatus,
  type ConformanceReport,
  type Sandbox,
  type SandboxFactory,
} from '@sandstream/types';
import { ConformanceFailure, describeError, HarnessError } from './assert.js';
import type { ConformanceCase } from './case.js';
import { CASES } from './cases/index.js';
import { createContext } from './context.js';
import { REQUIREMENTS } from './requirements.js';
import { checkSelectors, matches } from './select.js';
import { KIT_SPEC_VERSION, KIT_VERSION } from './version.js';

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** Returns a fresh, isolated sandbox on every call. */
  readonly factory: SandboxFactory;
  /** Run only cases matching one of these (id, `prefix.*`, or requirement id). */
  readonly include?: readonly string[];
  /** Report cases matching one of these as `disabled`. */
  readonly exclude?: readonly string[];
  /** Case ids the adapter is known to fail; a listed case that passes makes the run fail as stale. */
  readonly expectedFailures?: readonly string[];
  /** Per-case time limit in ms (default 20000); a hung case fails instead of hanging the run. */
  readonly caseTimeoutMs?: number;
  /** The adapter's SIGTERM-to-SIGKILL grace period in ms (default 2000, the spec's default). */
  readonly graceMs?: number;
  /** Called as each case starts and ends, for live progress. */
  readonly onCaseStart?: (testCase: ConformanceCase) => void;
  readonly onCaseEnd?: (result: CaseResult) => void;
}

const KNOWN_OPTIONS = new Set([
  'factory',
  'include',
  'exclude',
  'expectedFailures',
  'caseTimeoutMs',
  'graceMs',
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

/** Checks the options shared by every entry point; throws InvalidArgument naming the first bad one. */
export function validateOptions(options: ConformanceOptions): Required<Pick<ConformanceOptions, 'caseTimeoutMs' | 'graceMs'>> {
  for (const key of Object.keys(options)) {
    // Old or misspelt options must fail loudly rather than be ignored.
    if (!KNOWN_OPTIONS.has(key)) throw new InvalidArgument(`options.${key}`, 'unknown option');
  }
  if (typeof options.factory !== 'function') throw new InvalidArgument('options.factory', 'must be a function returning a Sandbox');
  const caseTimeoutMs = options.caseTimeoutMs ?? 20_000;
  const graceMs = options.graceMs ?? 2_000;
  if (!Number.isFinite(caseTimeoutMs) || caseTimeoutMs <= 0 || caseTimeoutMs > MAX_TIMER_MS) {
    throw new InvalidArgument('options.caseTimeoutMs', `must be a positive number of at most ${MAX_TIMER_MS}`);
  }
  if (graceMs > MAX_TIMER_MS) throw new InvalidArgument('options.graceMs', `must be at most ${MAX_TIMER_MS}`);
  if (!Number.isFinite(graceMs) || graceMs < 0) throw new InvalidArgument('options.graceMs', 'must be a non-negative number');
  checkSelectors(CASES, options.include ?? [], 'options.include');
  checkSelectors(CASES, options.exclude ?? [], 'options.exclude');
  return { caseTimeoutMs, graceMs };
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
    if (!manifest[capability]) return `the adapter does not advertise "${capability}"; the negative case capabilities.absent-${capability} runs instead`;
  }
  if (testCase.without !== undefined && manifest[testCase.without]) {
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
  for (const capability of CAPABILITIES) manifest[capability] = source[capability] === true;
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

interface CaseRun {
  readonly testCase: ConformanceCase;
  readonly manifest: CapabilityManifest;
  readonly factory: SandboxFactory;
  readonly timeoutMs: number;
  readonly graceMs: number;
}

/** Runs one case on a fresh sandbox; never throws. */
export async function runCase(run: CaseRun): Promise<{ status: CaseStatus; message?: string; durationMs: number }> {
  const { testCase, factory } = run;
  const started = performance.now();
  const done = (status: CaseStatus, message?: string) => ({
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
  let cleanup: (() => Promise<void>) | undefined;
  let outcome: { status: CaseStatus; message?: string; durationMs: number };
  let timedOut = false;
  try {
    await withTimeout(
      (async () => {
        creating = createSandbox(factory);
        sandbox = await creating;
        // The case may have timed out while the factory was slow: start nothing.
        if (controller.signal.aborted) return;
        const context = createContext(sandbox, factory, run.graceMs, controller.signal);
        cleanup = context.cleanup;
        await testCase.run(context.ctx);
      })(),
      timeoutMs,
      () => new CaseTimeout(`did not finish within ${timeoutMs} ms: the adapter hung (or the case needs a longer caseTimeoutMs)`),
    );
    outcome = done('pass');
  } catch (error) {
    if (error instanceof HarnessError) outcome = done('error', error.message);
    else if (error instanceof ConformanceFailure || error instanceof CaseTimeout) outcome = done('fail', error.message);
    // Anything else escaped from the adapter's own code paths.
    else outcome = done('fail', `unexpected ${describeError(error)}`);
    timedOut = error instanceof CaseTimeout;
  }
  controller.abort(new CaseTimeout('case ended'));
  if (sandbox === undefined) {
    // The factory is still working: close what it eventually returns.
    void creating?.then((late) => late.close()).catch(() => undefined);
    return outcome;
  }
  // Scratch files go through the sandbox, on a short budget of their own
  // (shorter still after a hang), so that a stuck run() cannot keep close()
  // from being called.
  if (cleanup !== undefined) {
    await withTimeout(cleanup(), timedOut ? 1_000 : 5_000, () => new CaseTimeout('cleanup hung')).catch(() => undefined);
  }
  // Closing terminates what the case left running: at most one grace period and kill wait.
  const closeBudget = run.graceMs + 10_000;
  const closed = await withTimeout(
    sandbox.close().then(() => undefined, (error: unknown) => describeError(error)),
    closeBudget,
    () => new CaseTimeout('close() hung'),
  ).catch(() => `did not resolve within ${closeBudget} ms`);
  if (closed !== undefined && outcome.status === 'pass') {
    // A sandbox that cannot be closed leaks what it runs (SS-TEAR-5).
    return done('fail', `Sandbox.close() after the case failed: ${closed}`);
  }
  return outcome;
}

/**
 * Runs the conformance kit against an adapter and returns its report,
 * validated against the spec's ConformanceReport schema. Never depends on
 * a test framework.
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
  const { caseTimeoutMs, graceMs } = validateOptions(options);
  const startedAt = new Date();
  const started = performance.now();
  const expected = new Set(options.expectedFailures ?? []);

  let adapterName = 'unknown';
  let manifest: CapabilityManifest = { streaming: false, stdin: false, 'resource-limits': false, user: false };
  let harnessProblem: string | undefined;
  try {
    const probe = await withTimeout(createSandbox(options.factory), caseTimeoutMs, () => new HarnessError('the factory hung'));
    adapterName = typeof probe.name === 'string' && probe.name !== '' ? probe.name : 'unnamed';
    manifest = manifestForReport(probe.capabilities);
    await withTimeout(probe.close(), graceMs + 10_000, () => new HarnessError('close() of a fresh, unused sandbox hung'));
  } catch (error) {
    harnessProblem = error instanceof HarnessError ? error.message : describeError(error);
  }

  const cases: CaseResult[] = [];
  for (const testCase of CASES) {
    const base = {
      id: testCase.id,
      title: testCase.title,
      requirements: [...testCase.requirements],
      expectedFailure: false,
    };
    let outcome: { status: CaseStatus; message?: string; durationMs: number };
    const included = (options.include ?? []).length === 0 || options.include!.some((s) => matches(testCase, s));
    const excluded = (options.exclude ?? []).some((s) => matches(testCase, s));
    if (!included || excluded) {
      outcome = { status: 'disabled', message: excluded ? 'excluded by the user' : 'not selected by include', durationMs: 0 };
    } else if (harnessProblem !== undefined) {
      outcome = { status: 'error', message: harnessProblem, durationMs: 0 };
    } else {
      options.onCaseStart?.(testCase);
      outcome = await runCase({ testCase, manifest, factory: options.factory, timeoutMs: caseTimeoutMs, graceMs });
    }
    const result: CaseResult = { ...base, ...outcome, expectedFailure: outcome.status === 'fail' && expected.has(testCase.id) };
    if (outcome.status === 'fail' && isAdvisory(testCase)) {
      result.message = `advisory (SHOULD): ${outcome.message ?? ''}`;
    }
    cases.push(result);
    options.onCaseEnd?.(result);
  }

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
  return report;
}

export { CASES };
