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
 * The machine's idle cores over its last second, from samples that every
 * case's judge takes as it looks: one window for the whole run, so a case
 * that has just reached its first bound already knows what the machine did
 * over the second before (a window of its own would make every case wait a
 * second of its own first, a second per case on a broken adapter whose cases
 * all wait).
 */
export class IdleWindow {
  /** The newest sample at least a window old, then every later one. */
  #samples: CpuSample[] = [];

  constructor(
    private readonly sample: () => CpuSample | undefined = sampleCpu,
    private readonly windowMs = 1_000,
  ) {}

  /**
   * Samples the machine now; the idle cores since the newest sample at least
   * a window old, or undefined while there is none, or when the newest is
   * over two windows old (nobody looked in between: that is not the last
   * second).
   */
  look(): number | undefined {
    const now = this.sample();
    if (now === undefined) return undefined;
    this.#samples.push(now);
    let base = -1;
    for (let i = 0; i < this.#samples.length; i++) if (now.at - this.#samples[i]!.at >= this.windowMs) base = i;
    if (base > 0) this.#samples = this.#samples.slice(base);
    const from = base >= 0 ? this.#samples[0] : undefined;
    return from === undefined || now.at - from.at > 2 * this.windowMs ? undefined : coresBetween(from, now).idle;
  }
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
  idle: IdleWindow = new IdleWindow(),
): (stalledMs: number, runningMs?: number) => boolean {
  return (stalledMs, runningMs = stalledMs) => {
    const idleCores = idle.look();
    const spare = idleCores !== undefined && idleCores >= SPARE_FOR_STALL;
    if (verdictKnown()) return stalledMs >= bounds.afterMs || (runningMs >= bounds.afterMs && spare);
    return stalledMs >= bounds.quietMs && spare;
  };
}
