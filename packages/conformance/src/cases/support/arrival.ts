/**
 * Waiting for output the command printed, bounded by what the sandbox
 * showed rather than by the case's time limit. A command the kit waits on
 * creates a marker file right after it prints the awaited text; once the
 * marker exists, the text was written, and the adapter has a measured bound
 * (five round trips, as measured at the case's start or by the read that
 * found the marker, at least 300 ms, widened by any stall of the kit's own
 * host) to deliver it. An adapter that holds output back then fails within
 * a fraction of a second, saying what never arrived and what came instead,
 * rather than after the whole per-case limit.
 */
import { ConformanceFailure } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { deliveryBound, readMarker, settledWithin, watchHostLag } from './observe.js';

/** How the kit knows the command printed what it waits for. */
export interface Printed {
  readonly ctx: CaseContext;
  /** A file the command creates right after printing it. */
  readonly marker: string;
}

/** What the wait is for, for the failure message. */
export interface Awaited extends Printed {
  /** "the line \"ready\" on stdout". */
  readonly what: string;
  /** What arrived meanwhile, as text. */
  got(): string;
  /**
   * The caller goes on after a failure (it is not the case's verdict), so the
   * case's processes are left running; by default a failure ends them first
   * (`ctx.endMarked()`).
   */
  readonly goesOn?: boolean;
}

/** Before looking for the marker: most output arrives sooner, and then no helper command runs at all. */
const FIRST_LOOK_MS = 50;
/** Between two looks for the marker. */
const POLL_MS = 25;

function unwrap<T>(outcome: { rejected: false; value: T } | { rejected: true; reason: unknown }): T {
  if (outcome.rejected) throw outcome.reason;
  return outcome.value;
}

/** "nothing", or what arrived, quoted and cut to its last 200 characters. */
export function shown(text: string): string {
  if (text === '') return 'nothing';
  return JSON.stringify(text.length > 200 ? `...${text.slice(-200)}` : text);
}

/**
 * Settles as `arrival` does (the case reading output until the awaited text
 * came), or fails once the command is known to have printed that text and it
 * has not arrived within a measured bound. While the marker does not exist,
 * the command has not printed it, and only the case's limit applies.
 */
export async function arrivalOf<T>(arrival: Promise<T>, awaited: Awaited): Promise<T> {
  const { ctx, marker } = awaited;
  let outcome = await settledWithin(arrival, FIRST_LOOK_MS);
  /** How long the read that found the marker took: the backend's round trip as it is now. */
  let readMs = 0;
  while (outcome === 'pending') {
    const reading = performance.now();
    const found = (await readMarker(ctx, marker)) !== undefined;
    readMs = performance.now() - reading;
    if (found) break;
    outcome = await settledWithin(arrival, POLL_MS);
  }
  if (outcome !== 'pending') return unwrap(outcome);
  const printedAt = performance.now();
  const lag = watchHostLag();
  const within = await deliveryBound(ctx, readMs);
  outcome = await settledWithin(arrival, within - (performance.now() - printedAt));
  // A stall of the kit's own process delays what it sees, not what the adapter did: it is added.
  const stalled = lag.stop();
  if (outcome === 'pending' && stalled > 0) outcome = await settledWithin(arrival, stalled);
  if (outcome !== 'pending') return unwrap(outcome);
  const waited = Math.round(performance.now() - printedAt);
  // What had arrived by then, before ending the command makes an adapter let go of what it held.
  const got = shown(awaited.got());
  const ended = awaited.goesOn === true ? [] : await ctx.endMarked();
  throw new ConformanceFailure(
    `${awaited.what} never arrived, though the command had printed it (it created ${marker} right after) ` +
      `${waited} ms before; got instead: ${got}` +
      (ended.length === 0 ? '' : `; the kit then ended the case's processes (pid ${ended.join(', ')})`),
  );
}

/** A promise that resolves when `saw` is called, for an onOutput callback to report the awaited text. */
export function signal(): { promise: Promise<void>; saw(): void } {
  let saw!: () => void;
  const promise = new Promise<void>((resolve) => (saw = resolve));
  return { promise, saw };
}

/**
 * Bounds a run() whose onOutput waits for the awaited text (`seen` resolves
 * when it came): resolves once it came or the run() settled; fails, after
 * aborting `controller` so that the run() ends, once the command printed the
 * text and it did not arrive.
 */
export async function seenInRun(running: Promise<unknown>, seen: Promise<void>, awaited: Awaited, controller?: AbortController): Promise<void> {
  try {
    await arrivalOf(
      Promise.race([
        seen,
        running.then(
          () => undefined,
          () => undefined,
        ),
      ]),
      awaited,
    );
  } catch (error) {
    running.catch(() => undefined);
    controller?.abort(error);
    throw error;
  }
}
