/**
 * When a case that only waits frees its slot for the next case (ADR-0051).
 * Most of a broken adapter's extra time is waiting: a kill wait, a grace
 * period, output that never comes, the case limit. Such waits need no CPU,
 * so the next case may run beside them. Once a case has failed the run (the
 * verdict is known), a case stalled for {@link STALL_MS} frees its slot, and so
 * does one that has run that long while the machine had a core to spare. Before
 * that, only a case stalled for {@link QUIET_STALL_MS} on a machine with a
 * core to spare does: a correct adapter's case rarely waits that long with
 * no call settling, and when it does, a neighbour costs it nothing.
 */
import { coresBetween, sampleCpu, type CpuSample } from './machine-cpu.js';

/**
 * A case with no call into the adapter settled for this long (or three round
 * trips, if longer) only waits.
 */
export const STALL_MS = 300;

/** Before the verdict is known, the stall a case must reach (or twenty round trips, if longer). */
export const QUIET_STALL_MS = 5_000;

/** The idle cores the machine must have had over the last second for a stall before the verdict to free a slot. */
export const SPARE_FOR_STALL = 1;

/** The stall bounds for a backend with this round trip. */
export function stallBounds(roundTripMs: number | undefined): { readonly afterMs: number; readonly quietMs: number } {
  const rt = roundTripMs ?? 0;
  return { afterMs: Math.max(STALL_MS, 3 * rt), quietMs: Math.max(QUIET_STALL_MS, 20 * rt) };
}

/**
 * One case's judge of its stalls: called on every poll with how long the
 * case has been stalled and how long it has run, it says whether the case
 * frees its slot now. Once the verdict is known, a case also frees it when it
 * has run for the first bound while the machine had a core to spare over the
 * last second: its calls may settle (a broken adapter's other calls answer)
 * while what it awaits waits on a timer, and the idle core says so.
 */
export function stallJudge(
  bounds: { readonly afterMs: number; readonly quietMs: number },
  verdictKnown: () => boolean,
  sample: () => CpuSample | undefined = sampleCpu,
): (stalledMs: number, runningMs?: number) => boolean {
  let last: CpuSample | undefined;
  let idleCores: number | undefined;
  return (stalledMs, runningMs = stalledMs) => {
    // The machine's idle cores over the last second or so, measured as the case goes on.
    const now = sample();
    if (now !== undefined && (last === undefined || now.at - last.at >= 1_000)) {
      if (last !== undefined) idleCores = coresBetween(last, now).idle;
      last = now;
    }
    const spare = idleCores !== undefined && idleCores >= SPARE_FOR_STALL;
    if (verdictKnown()) return stalledMs >= bounds.afterMs || (runningMs >= bounds.afterMs && spare);
    return stalledMs >= bounds.quietMs && spare;
  };
}
