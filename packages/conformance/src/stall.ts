/**
 * When a case that only waits frees its slot for the next case (ADR-0051).
 * Most of a broken adapter's extra time is waiting: a kill wait, a grace
 * period, output that never comes, the case limit. Such waits need no CPU,
 * so the next case may run beside them. Once a case has failed the run (the
 * verdict is known), a case stalled for {@link STALL_MS} frees its slot. Before
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
 * One case's judge of its stalls: called with how long the case has been
 * stalled, on every poll, it says whether the case frees its slot now.
 */
export function stallJudge(
  bounds: { readonly afterMs: number; readonly quietMs: number },
  verdictKnown: () => boolean,
  sample: () => CpuSample | undefined = sampleCpu,
): (stalledMs: number) => boolean {
  let last: CpuSample | undefined;
  let idleCores: number | undefined;
  return (stalledMs) => {
    if (verdictKnown()) return stalledMs >= bounds.afterMs;
    // The machine's idle cores over the last second or so, measured as the stall goes on.
    const now = sample();
    if (now !== undefined && (last === undefined || now.at - last.at >= 1_000)) {
      if (last !== undefined) idleCores = coresBetween(last, now).idle;
      last = now;
    }
    return stalledMs >= bounds.quietMs && idleCores !== undefined && idleCores >= SPARE_FOR_STALL;
  };
}
