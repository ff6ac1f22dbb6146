/**
 * The end of a run: whatever still runs carrying the mark of one of the
 * run's cases (a token in its argv, a scratch directory) is ended by the
 * kit, whatever the adapter's close() did, and each case's result says what
 * of its own the kit had to end. A case's sweep after its failure
 * (`run-case.ts`) covers the failures; this covers the rest: a case that
 * passed on an adapter whose close() leaves its commands running, a case
 * abandoned at its limit whose work started something afterwards.
 */
import type { SandboxFactory } from '@sandstream/types';
import { createSandbox, withTimeout } from './run-case.js';
import { sweepMarked, type Swept } from './sandbox-scripts.js';

/** How long the sandbox, the sweep and its close() may take, each: the end of a run is best effort. */
const STEP_MS = 30_000;

/** The marks of a run's cases: each case's tokens, as its run reports them. */
export class RunMarks {
  readonly #byCase = new Map<string, string[]>();

  /** Adds the marks of the case `id`. */
  add(id: string, tokens: readonly string[]): void {
    if (tokens.length === 0) return;
    this.#byCase.set(id, [...(this.#byCase.get(id) ?? []), ...tokens]);
  }

  /** Every mark, each with the case that made it. */
  entries(): Array<[token: string, id: string]> {
    return [...this.#byCase].flatMap(([id, tokens]) => tokens.map((token): [string, string] => [token, id]));
  }
}

/**
 * Ends, through a fresh sandbox of the factory (the observer the sweep after
 * a failed case uses too), every process that carries one of `marks`.
 * Returns what it ended, by case id; empty when the sweep cannot run (no
 * `/proc`, a factory or run() that fails), which it says nothing about: the
 * cases judge the adapter, this only tidies up after them.
 */
export async function endLeftovers(factory: SandboxFactory, marks: RunMarks): Promise<Map<string, Swept[]>> {
  const entries = marks.entries();
  const ended = new Map<string, Swept[]>();
  if (entries.length === 0) return ended;
  const caseOf = new Map(entries);
  let observer: Awaited<ReturnType<typeof createSandbox>> | undefined;
  try {
    observer = await withTimeout(createSandbox(factory), STEP_MS, () => new Error('the factory hung'));
    const swept = await withTimeout(sweepMarked(observer, [...caseOf.keys()]), STEP_MS, () => new Error('the sweep hung'));
    for (const process of swept) {
      const id = caseOf.get(process.token);
      if (id !== undefined) ended.set(id, [...(ended.get(id) ?? []), process]);
    }
  } catch {
    // Best effort, as above.
  } finally {
    if (observer !== undefined) await withTimeout(observer.close(), STEP_MS, () => new Error('close() hung')).catch(() => undefined);
  }
  return ended;
}

/** What a case's result says of the processes of its own the kit ended after the run. */
export function leftoverNote(ended: readonly Swept[]): string {
  const count = ended.length === 1 ? '1 process' : `${ended.length} processes`;
  const each = ended.map((process) => `pid ${process.pid} ${JSON.stringify(process.command)}`).join(', ');
  return `after the run, the kit ended ${count} this case had started and that still ran, through a fresh sandbox: ${each}`;
}
