/**
 * What an adapter throws where no caller can catch it: an exception from a
 * timer or an event handler (an `'error'` event nobody listens to is one), or
 * a promise rejected with no handler. Node would end the process with a raw
 * stack; the kit takes these process events over while it runs, finds the
 * case that was running, and fails that case with the error. See ADR-0031.
 *
 * Attribution: every case runs inside an {@link AsyncLocalStorage} scope,
 * which Node carries into the timers, callbacks, ticks and promises the case
 * (and the adapter code it calls) started, so a fault is charged to the case
 * whose work raised it, even with several cases in flight. A fault that
 * carries no scope (raised from a resource created outside every case, or
 * from a garbage-collection callback) is charged to every case in flight,
 * saying which; with none in flight, to the run itself.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { inspect } from 'node:util';
import { ConformanceFailure, describeError } from './assert.js';

/** How a fault escaped. */
export type FaultKind = 'uncaught exception' | 'unhandled rejection';

/** One fault, as the kit saw it. */
export interface Fault {
  readonly kind: FaultKind;
  readonly error: unknown;
  /** The promise that was rejected, for an unhandled rejection. */
  readonly promise?: Promise<unknown>;
}

/** A case failed by a fault: a {@link ConformanceFailure}, so the case's status is `fail`. */
export class AdapterFault extends ConformanceFailure {}

/** Where faults and warnings raised inside a case's scope go. */
export interface CaseScope {
  /** The case's id, or for a phase of the run (the probe, a hook) what it is. */
  readonly label: string;
  /** True for a phase of the run rather than a case. */
  readonly phase?: boolean;
  /** The run the case belongs to, when runConformance runs it. */
  readonly run: RunWatch | undefined;
  /** Declared on the case: the warning codes it provokes on purpose. */
  readonly expectedWarnings: readonly string[];
  /** False once runCase has returned the case's outcome. */
  readonly running: boolean;
}

/** What a run (runConformance) does with faults no running case owns, and with warnings. */
export interface RunWatch {
  /** A fault that no case owns, or that a case raised after its outcome was reported. */
  fault(fault: Fault, lateFrom: CaseScope | undefined): void;
}

/** A case's scope as runCase holds it. */
export interface LiveScope extends CaseScope {
  /** Rejects with an {@link AdapterFault} at the case's first fault. */
  readonly failed: Promise<never>;
  /** How many faults the case's verdict already shows (the first, when it failed the case). */
  shown: number;
  /** What the faults after the first `skip` say, or undefined if there were none. */
  describe(skip?: number): string | undefined;
  /** Ends the scope: later faults are late. */
  end(): void;
}

const scopes = new AsyncLocalStorage<CaseScope>();
const inFlight = new Set<LiveScope & { charge(fault: Fault, note: string): void }>();
const runs = new Set<RunWatch>();

/** The case in whose scope the caller runs, if any (for faults raised after the run). */
export function currentCase(): CaseScope | undefined {
  const own = scopes.getStore();
  return own?.phase ? undefined : own;
}

/** The cases in flight now, most precise first: the caller's scope, else every running case; none in a phase's scope. */
export function casesInFlight(): readonly CaseScope[] {
  const own = scopes.getStore();
  if (own !== undefined) return own.phase ? [] : [own];
  return [...inFlight];
}

/**
 * Runs `body`, a phase of a run outside every case (the probe of the
 * adapter, a hook), in a scope of its own: what its work raises, then or
 * later, goes to `run` labelled with the phase, never to a case in flight.
 */
export function inPhaseScope<T>(label: string, run: RunWatch, body: () => Promise<T>): Promise<T> {
  return scopes.run({ label, phase: true, run, expectedWarnings: [], running: false }, body);
}

/** The first frame of a stack outside Node's own code: where in the adapter it came from. */
function origin(error: unknown): string {
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : '';
  const frame = stack
    .split('\n')
    .slice(1)
    .map((line) => line.trim())
    .find((line) => line.startsWith('at ') && !/\(node:|^at node:/.test(line));
  return frame === undefined ? '' : ` (${frame})`;
}

/** One fault in words, for a report. */
export function describeFault(fault: Fault): string {
  const what = fault.error instanceof Error ? describeError(fault.error) : `a non-error value ${inspect(fault.error, { breakLength: Infinity, maxStringLength: 200 })}`;
  return `${fault.kind}: ${what}${origin(fault.error)}`;
}

/** At most three faults in words, and how many more. */
function describeFaults(faults: readonly { fault: Fault; note: string }[]): string {
  const shown = faults.slice(0, 3).map(({ fault, note }) => `${describeFault(fault)}${note}`);
  const more = faults.length > 3 ? `; and ${faults.length - 3} more` : '';
  return `${shown.join('; ')}${more}`;
}

/** What a failure message adds after the faults: what the author must change. */
export const FAULT_ADVICE =
  'an adapter must catch its own errors (an \'error\' listener on every stream and emitter it creates, a handler on every promise) and report them through the call they belong to';

// ---- The process listeners, held while at least one case or run is guarded.

const EVENTS = ['uncaughtException', 'unhandledRejection'] as const;
let holders = 0;
let saved: Array<[string, (...args: unknown[]) => void]> = [];

function onUncaught(error: unknown): void {
  dispatch({ kind: 'uncaught exception', error });
}
function onRejection(reason: unknown, promise: Promise<unknown>): void {
  dispatch({ kind: 'unhandled rejection', error: reason, promise });
}

/** Charges a fault to its case, the cases in flight, the runs, or, with none of them, hands it on. */
function dispatch(fault: Fault): void {
  const own = scopes.getStore() as (LiveScope & { charge?(fault: Fault, note: string): void }) | undefined;
  if (own !== undefined) {
    if (own.running && own.charge !== undefined) return own.charge(fault, '');
    // Late: the case's outcome is out; its run may still amend it.
    if (own.run !== undefined && runs.has(own.run)) return own.run.fault(fault, own);
    return handOn(fault, own.phase ? undefined : own);
  }
  if (inFlight.size > 0) {
    const all = [...inFlight];
    const note =
      all.length === 1
        ? ' (raised outside the case\'s own work, while it was the only case running)'
        : ` (raised outside any case's own work while ${all.length} cases ran: ${all.map((s) => s.label).join(', ')}; the kit cannot tell which one caused it)`;
    for (const scope of all) scope.charge(fault, note);
    return;
  }
  if (runs.size > 0) {
    for (const run of runs) run.fault(fault, undefined);
    return;
  }
  handOn(fault, undefined);
}

/**
 * A fault nothing of the kit owns (a case's, raised after its outcome went
 * back to a caller that is not runConformance): handed to the listeners the
 * kit displaced, naming the case; with none, Node's own end of the process.
 */
function handOn(fault: Fault, late: CaseScope | undefined): void {
  const error =
    late === undefined
      ? fault.error
      : new Error(`after the conformance case ${late.label} ended, the adapter raised an ${describeFault(fault)}; ${FAULT_ADVICE}`, { cause: fault.error });
  const event = fault.kind === 'uncaught exception' ? 'uncaughtException' : 'unhandledRejection';
  const listeners = saved.filter(([name]) => name === event).map(([, listener]) => listener);
  if (listeners.length === 0) {
    process.stderr.write(`${inspect(error)}\n`);
    process.exit(1);
  }
  for (const listener of listeners) listener(error, event === 'uncaughtException' ? 'uncaughtException' : fault.promise);
}

/** Takes the fault events over (counted: the last release gives them back). */
export function holdFaults(): () => void {
  if (holders++ === 0) {
    saved = EVENTS.flatMap((event) => process.rawListeners(event).map((listener) => [event, listener as (...args: unknown[]) => void] as [string, (...args: unknown[]) => void]));
    for (const event of EVENTS) process.removeAllListeners(event);
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onRejection);
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--holders > 0) return;
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onRejection);
    for (const [event, listener] of saved) process.on(event, listener);
    saved = [];
  };
}

/** Registers a run for the faults no running case owns; returns its release. */
export function watchRun(run: RunWatch): () => void {
  const release = holdFaults();
  runs.add(run);
  return () => {
    runs.delete(run);
    release();
  };
}

/**
 * Runs `body` (one case, from its sandbox's creation to its close) in a
 * scope of its own, with the fault events held. `body` gets the scope: it
 * races its work against `scope.failed` and reads `scope.describe()` when it
 * has its outcome.
 */
export async function inCaseScope<T>(
  label: string,
  options: { run?: RunWatch | undefined; expectedWarnings?: readonly string[] | undefined },
  body: (scope: LiveScope) => Promise<T>,
): Promise<T> {
  const faults: Array<{ fault: Fault; note: string }> = [];
  let fail!: (error: AdapterFault) => void;
  const failed = new Promise<never>((_, reject) => {
    fail = reject;
  });
  failed.catch(() => undefined);
  const scope = {
    label,
    run: options.run,
    expectedWarnings: options.expectedWarnings ?? [],
    running: true,
    failed,
    charge(fault: Fault, note: string): void {
      faults.push({ fault, note });
      if (faults.length === 1) fail(new AdapterFault(`the adapter raised an ${describeFaults(faults)}, where no caller could catch it; ${FAULT_ADVICE}`));
    },
    shown: 0,
    describe: (skip = 0) => (faults.length <= skip ? undefined : describeFaults(faults.slice(skip))),
    end(): void {
      scope.running = false;
      inFlight.delete(scope);
    },
  };
  const release = holdFaults();
  inFlight.add(scope);
  try {
    return await scopes.run(scope, () => body(scope));
  } finally {
    scope.end();
    release();
  }
}

/**
 * `body`, unless the case raises a fault first: then the case's verdict is
 * that fault (an {@link AdapterFault}), without waiting for `body`, which a
 * fault often leaves pending forever.
 */
export async function raceFaults<T>(scope: LiveScope, body: () => Promise<T>): Promise<T> {
  const work = body();
  try {
    return await Promise.race([work, scope.failed]);
  } catch (error) {
    if (error instanceof AdapterFault) {
      scope.shown = 1;
      // What the case still does is abandoned, as after a timeout; its own rejection goes nowhere.
      work.catch(() => undefined);
    }
    throw error;
  }
}
