/**
 * Process warnings emitted while the kit runs, each attributed to the case
 * that provoked it (the same scopes as faults, `faults.ts`) and marked
 * expected when that case declares its code (`expectedWarnings`: the
 * SANDSTREAM_PROCESS_LEAKED that `teardown.garbage-collected` provokes on
 * purpose). Unexpected ones go on to the process's own warning listeners
 * (Node prints them) unless the run's caller takes them (`onWarning`);
 * expected ones are kept from them, so a passing run prints no warning.
 */
import { casesInFlight, type CaseScope, type RunWatch } from './faults.js';

/** A process warning emitted during a run, as `onWarning` receives it. */
export interface RunWarning {
  /** The warning, as `process.on('warning')` receives it. */
  readonly warning: Error & { code?: string };
  /**
   * The ids of the cases it is attributed to: the case whose work emitted
   * it, else every case running at the time; empty when none was.
   */
  readonly cases: readonly string[];
  /** Whether every one of those cases provokes this warning on purpose. */
  readonly expected: boolean;
}

/** A run's side of warnings: true when it took the warning (the process's listeners then do not get it). */
export type WarningSink = (warning: RunWarning) => boolean;

const sinks = new Map<object, WarningSink>();
let saved: Array<(...args: unknown[]) => void> = [];

/** Whether `cases` all provoke a warning with this code on purpose. */
export function isExpected(code: string | undefined, cases: readonly CaseScope[]): boolean {
  return code !== undefined && cases.length > 0 && cases.every((c) => c.expectedWarnings.includes(code));
}

function onWarning(warning: Error & { code?: string }): void {
  const scopes = casesInFlight();
  const event: RunWarning = { warning, cases: scopes.map((s) => s.label), expected: isExpected(warning.code, scopes) };
  // The runs of the cases it is attributed to; with no case, every run in progress.
  const owners = new Set(scopes.map((s) => s.run).filter((run): run is RunWatch => run !== undefined && sinks.has(run)));
  // With no run of its own (a case the Vitest entry runs), every watcher hears it.
  const targets = owners.size > 0 ? [...owners] : [...sinks.keys()];
  let taken = targets.length > 0;
  for (const run of targets) taken = sinks.get(run)!(event) && taken;
  if (!taken && !event.expected) for (const listener of saved) listener(warning);
}

/**
 * Takes the process's warning listeners over for a run (`owner`: its
 * RunWatch, or any object for a suite of the Vitest entry); the returned
 * function gives them back once the last one in progress ends.
 */
export function watchWarnings(owner: object, sink: WarningSink): () => void {
  if (sinks.size === 0) {
    saved = process.rawListeners('warning') as Array<(...args: unknown[]) => void>;
    process.removeAllListeners('warning');
    process.on('warning', onWarning);
  }
  sinks.set(owner, sink);
  return () => {
    if (!sinks.delete(owner) || sinks.size > 0) return;
    process.off('warning', onWarning);
    for (const listener of saved) process.on('warning', listener);
    saved = [];
  };
}
