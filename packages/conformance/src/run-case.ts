/**
 * One case's run: a fresh sandbox, the case under its time limit, the
 * verdict, scratch clean-up, close(), and the sweep of what a failed case
 * left running.
 */
import { hasCapability, type BackgroundProcess, type CapabilityManifest, type CaseStatus, type Process, type Sandbox, type SandboxFactory } from '@sandstream/types';
import { TIMED_OUT, within } from '@sandstream/types/runtime';
import { ConformanceFailure, describeError, flattenSuppressed, HarnessError } from './assert.js';
import type { ConformanceCase } from './case.js';
import { NOTHING_REFUSED } from './refusals.js';
import { deliveryBound, freshRoundTrip } from './timing.js';
import { createContext, type ContextHandle } from './context.js';
import type { ConformanceHooks } from './hooks.js';
import { describePending, trackCalls, type CallTracker } from './pending.js';
import { sweep } from './sandbox-scripts.js';
import { FAULT_ADVICE, inCaseScope, raceFaults, type LiveScope, type RunWatch } from './faults.js';
import { describeTermination, terminationOf, type Termination } from './termination-settings.js';
import type { OwnerLauncher } from './owner-launcher.js';
import type { RunMarks } from './leftovers.js';

function isSandbox(value: unknown): value is Sandbox {
  const sb = value as Partial<Sandbox> | null;
  return typeof sb === 'object' && sb !== null && typeof sb.run === 'function' && typeof sb.stream === 'function' && typeof sb.close === 'function' && typeof sb.capabilities === 'object';
}

/** A sandbox from the factory; a factory that throws or returns something else is a harness error. */
export async function createSandbox(factory: SandboxFactory): Promise<Sandbox> {
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
export function skipReason(testCase: ConformanceCase, manifest: CapabilityManifest, hooks?: ConformanceHooks): string | undefined {
  for (const capability of testCase.needs ?? []) {
    if (hasCapability(manifest, capability)) continue;
    // Some capabilities refuse nothing when absent: there is no negative case to name.
    if (NOTHING_REFUSED.includes(capability)) return `the adapter does not advertise "${capability}"`;
    return `the adapter does not advertise "${capability}"; the negative case capabilities.absent-${capability} runs instead`;
  }
  if (testCase.without !== undefined && hasCapability(manifest, testCase.without)) {
    return `the adapter advertises "${testCase.without}"; this case checks its absence`;
  }
  for (const { hook, without } of testCase.needsHooks ?? []) {
    if (typeof hooks?.[hook] !== 'function') return `the adapter module exports no \`conformanceHooks.${hook}\`: ${without}`;
  }
  return undefined;
}

/** `promise`, or the error `onTimeout` makes once `ms` have passed. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  const outcome = await within(promise, ms);
  if (outcome === TIMED_OUT) throw onTimeout();
  return outcome;
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
  /** The module an owner process loads (see {@link ConformanceOptions.ownerModule}). */
  readonly ownerModule?: string | undefined;
  /** How a run through a testee starts an owner process (spec 1.4 section 18.6: a second testee). */
  readonly launchOwner?: OwnerLauncher | undefined;
  /**
   * Called on every poll while no call into the adapter has settled for
   * `afterMs` (the case only waits, or its clean-up and close() do), with
   * how long: the engine may then let the next case start beside it
   * (`stall.ts`, ADR-0051).
   */
  readonly stall?: { readonly afterMs: number; readonly onStall: (stalledMs: number, runningMs: number) => void } | undefined;
}

/** How often a case is looked at for a stall. */
const STALL_POLL_MS = 100;

/** A case that ran into its time limit: what the run needs to judge whether it was only slow (`at-limit.ts`). */
export interface LimitReached {
  /** The limit it ran into. */
  readonly limitMs: number;
  /** How long before the limit a call into the adapter last settled; absent when none ever did. */
  readonly lastSettledAgoMs?: number;
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
export function runCase(run: CaseRun): Promise<CaseOutcome> {
  return runCaseWatched(run, undefined);
}

/**
 * {@link runCase} in a fault scope of its own (`faults.ts`): what the adapter
 * throws where no caller can catch it while the case runs fails the case;
 * `watch` (runConformance's) receives what it raises after its outcome.
 */
export async function runCaseWatched(run: CaseRun, watch: RunWatch | undefined, marks?: RunMarks, onLimit?: (reached: LimitReached) => void): Promise<CaseOutcome> {
  const { id, expectedWarnings } = run.testCase;
  return inCaseScope(id, { run: watch, expectedWarnings }, async (scope) => {
    const outcome = await runCaseScoped(run, scope, marks, onLimit);
    // Faults raised after the verdict, while the sandbox was cleaned up and closed.
    const after = scope.describe(scope.shown);
    if (after === undefined) return outcome;
    const message = `${outcome.message === undefined ? '' : `${outcome.message}; then, `}the adapter raised an ${after}, where no caller could catch it; ${FAULT_ADVICE}`;
    return { ...outcome, status: outcome.status === 'error' ? 'error' : 'fail', message };
  });
}

async function runCaseScoped(run: CaseRun, scope: LiveScope, marks: RunMarks | undefined, onLimit: ((reached: LimitReached) => void) | undefined): Promise<CaseOutcome> {
  const started = performance.now();
  let tracker: CallTracker | undefined;
  // The stall clock starts once the sandbox exists: a slow factory is the backend working, not the case waiting.
  let ready: number | undefined;
  const stall = run.stall;
  const stallTimer =
    stall === undefined
      ? undefined
      : setInterval(() => {
          if (ready === undefined) return;
          const now = performance.now();
          const stalledMs = now - Math.max(ready, tracker?.lastSettled() ?? ready);
          const runningMs = now - ready;
          if (runningMs >= stall.afterMs) stall.onStall(stalledMs, runningMs);
        }, STALL_POLL_MS);
  stallTimer?.unref();
  try {
    return await runCaseStages(run, scope, marks, onLimit, started, (made) => {
      tracker = made;
      ready = performance.now();
    });
  } finally {
    clearInterval(stallTimer);
  }
}

async function runCaseStages(
  run: CaseRun,
  scope: LiveScope,
  marks: RunMarks | undefined,
  onLimit: ((reached: LimitReached) => void) | undefined,
  started: number,
  tracked: (tracker: CallTracker) => void,
): Promise<CaseOutcome> {
  const { testCase, factory } = run;
  const hooks = run.hooks ?? {};
  const done = (status: CaseStatus, message?: string): CaseOutcome => ({
    status,
    durationMs: Math.round((performance.now() - started) * 10) / 10,
    ...(message === undefined ? {} : { message }),
  });
  const reason = skipReason(testCase, run.manifest, hooks);
  if (reason !== undefined) return done('skipped', reason);

  // A case that moves a lot of data declares a longer limit of its own; the larger one applies.
  const timeoutMs = Math.max(testCase.timeoutMs ?? 0, run.timeoutMs);
  const controller = new AbortController();
  let creating: Promise<Sandbox> | undefined;
  let sandbox: Sandbox | undefined;
  let handle: ContextHandle | undefined;
  let tracker: CallTracker | undefined;
  let termination: Termination | undefined;
  let outcome: CaseOutcome;
  let timedOut = false;
  // A call found hung once the command's end was known fails the case at once (see pending.ts).
  let cutShort!: (failure: Error) => void;
  const hung = new Promise<never>((_, reject) => (cutShort = reject));
  hung.catch(() => undefined);
  try {
    await withTimeout(
      Promise.race([
        raceFaults(scope, async () => {
          creating = createSandbox(factory);
          sandbox = await creating;
          // The case may have timed out while the factory was slow: start nothing.
          if (controller.signal.aborted) return;
          termination = terminationOf(sandbox, { graceMs: run.graceMs, label: 'the graceMs option (--grace-ms)' });
          // The case's calls into the adapter go through a view that knows which are pending.
          tracker = trackCalls(sandbox, { bound: (freshMs) => deliveryBound(handle!.ctx, freshMs), fresh: (withinMs) => freshRoundTrip(handle!.ctx, withinMs), hung: cutShort });
          tracked(tracker);
          handle = createContext(tracker.sandbox, { factory, termination, signal: controller.signal, hooks: unwrappingAttach(hooks, tracker), ownerModule: run.ownerModule, launchOwner: run.launchOwner });
          await testCase.run(handle.ctx);
        }),
        hung,
      ]),
      timeoutMs,
      () => new CaseTimeout(timeoutMessage(timeoutMs, tracker, handle)),
    );
    outcome = done('pass');
  } catch (error) {
    const verdict = classify(error);
    timedOut = verdict.timedOut;
    if (timedOut) {
      const settled = tracker?.lastSettled();
      onLimit?.({ limitMs: timeoutMs, ...(settled === undefined ? {} : { lastSettledAgoMs: performance.now() - settled }) });
    }
    // A failure that depends on the grace period says which one the kit used, and where it came from.
    const settings = verdict.status === 'fail' && handle?.usedTermination() && termination ? ` [${describeTermination(termination)}]` : '';
    outcome = done(verdict.status, `${verdict.message}${settings}`);
  }
  tracker?.stop();
  controller.abort(new CaseTimeout('case ended'));
  if (sandbox === undefined) {
    // The factory is still working: close what it eventually returns.
    void creating?.then((late) => late.close()).catch(() => undefined);
    return outcome;
  }
  // The run ends whatever still carries them once every case is done (leftovers.ts), passed or not.
  marks?.add(testCase.id, handle?.tokens() ?? []);
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

/** What a case that ran into its limit says: which call never settled, and how to raise the limit. */
function timeoutMessage(timeoutMs: number, tracker: CallTracker | undefined, handle: ContextHandle | undefined): string {
  const awaited = tracker === undefined ? 'the factory did not return a sandbox' : describePending(tracker.pending(), performance.now(), handle?.waits());
  return `did not finish within ${timeoutMs} ms: ${awaited}. If the adapter is only slow, raise the per-case limit: --case-timeout <ms> on the command line, caseTimeoutMs in the API`;
}

/** `hooks` whose attach(), owner() and sever() get the adapter's own objects, not the case's views of them. */
function unwrappingAttach(hooks: ConformanceHooks, tracker: CallTracker): ConformanceHooks {
  const { attach, owner, sever } = hooks;
  return {
    ...hooks,
    ...(attach === undefined ? {} : { attach: (sandbox: Sandbox) => attach.call(hooks, tracker.unwrap(sandbox)) }),
    ...(owner === undefined ? {} : { owner: (sandbox: Sandbox) => owner.call(hooks, tracker.unwrap(sandbox)) }),
    // The adapter's own Process: a hook that finds its driver by the object (the runtime's driverOf) needs it.
    ...(sever === undefined ? {} : { sever: (proc: BackgroundProcess | Process) => sever.call(hooks, tracker.unwrap(proc)) }),
  };
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

