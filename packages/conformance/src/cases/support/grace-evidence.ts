/**
 * What a command that outlives SIGTERM tells of the time it lived after it,
 * measured in the sandbox, for the cases that time the grace period
 * (`termination.settings`, `teardown.sigkill-after-grace`).
 *
 * The kit times the grace period on its own clock, from the command's report
 * of SIGTERM to the end. Two things can shorten what it sees, neither of them
 * the adapter's doing:
 * - the report reaches the kit late (a loaded backend's stream): after
 *   SIGTERM the command writes a tick per pass of its loop, each pass at least
 *   {@link TICK_MS}, and the ticks that arrive prove how long it lived;
 * - the command's shell runs its trap late (a loaded sandbox: the shell waits
 *   for a CPU, or for the `sleep` of its pass): each pass first reads the
 *   sandbox's uptime (a builtin `read` of `/proc/uptime`, no process), and the
 *   trap reports the last stamp before SIGTERM beside its own, so the time
 *   SIGTERM may have waited unseen is known on the sandbox's clock.
 * Where `/proc/uptime` cannot be read, the stamps are empty and only the ticks
 * and the kit's clock count.
 */

/** One pass of the command's loop sleeps at least this long. */
const TICK_MS = 10;

/**
 * Stamps `p` with the sandbox's uptime. Read into `q` first: a `read` that
 * SIGTERM interrupts fails, and `p` keeps the earlier stamp, which only
 * allows a longer wait.
 */
const STAMP = '{ read q _ </proc/uptime; } 2>/dev/null && p=$q';

/**
 * The command's SIGTERM trap: it reports `term <stamp before SIGTERM> <trap
 * stamp>` and carries on; then the first stamp. SIGPIPE is ignored: a
 * runtime that stopped reading after giving up must not end the command by
 * a tick.
 */
export const GRACE_TRAP = `trap "" PIPE; p=; trap '{ read n _ </proc/uptime; } 2>/dev/null || n=; echo "term $p $n"; t=1' TERM; ${STAMP}`;

/** The command's loop, after its trap and its own setup: forever, a stamp per pass, and a tick per pass once SIGTERM came. */
export const GRACE_LOOP = `while :; do ${STAMP}; sleep ${TICK_MS / 1000}; if [ -n "$t" ]; then echo tick; fi; done`;

/** What the command's output says of the time after SIGTERM. */
export interface GraceEvidence {
  /** Ticks after the report of SIGTERM, times {@link TICK_MS}: a lower bound of the time the command lived after its trap ran. */
  readonly tickedMs: number;
  /** How long SIGTERM may have waited before the trap ran: from the last stamp before it to the trap, on the sandbox's uptime (10 ms steps); 0 where unknown. */
  readonly stalledMs: number;
}

/** Reads {@link GraceEvidence} from all the command printed. */
export function graceEvidence(seen: string): GraceEvidence {
  const at = seen.indexOf('term');
  if (at < 0) return { tickedMs: 0, stalledMs: 0 };
  const after = seen.slice(at);
  const tickedMs = (after.match(/tick/g)?.length ?? 0) * TICK_MS;
  const stamps = /^term ([0-9]+(?:\.[0-9]+)?) ([0-9]+(?:\.[0-9]+)?)\n/.exec(after);
  const stalledMs = stamps === null ? 0 : Math.max(0, Math.round((Number(stamps[2]) - Number(stamps[1])) * 1000));
  return { tickedMs, stalledMs };
}

/** What a grace period was measured against: the kit's spacing and its leeway. */
export interface GraceTiming {
  /** From the report of SIGTERM to the end, on the kit's clock. */
  readonly spacingMs: number;
  /** The measured round trip to the sandbox. */
  readonly roundTripMs: number;
  /** How long the kit's own process stalled meanwhile. */
  readonly hostLagMs: number;
}

/**
 * Whether the command may have lived `atLeastMs` after SIGTERM: by the kit's
 * clock, with a round trip, the kit's stall and the shell's stall as leeway,
 * or by its own ticks and the shell's stall. Only a shorter life than every
 * reading allows is a failure.
 */
export function mayHaveLived(atLeastMs: number, timing: GraceTiming, evidence: GraceEvidence): boolean {
  const byKit = timing.spacingMs + timing.roundTripMs + timing.hostLagMs + evidence.stalledMs;
  const bySandbox = evidence.tickedMs + evidence.stalledMs;
  return byKit >= atLeastMs || bySandbox >= atLeastMs;
}

/** The readings, for a failure message. */
export function describeGraceTiming(timing: GraceTiming, evidence: GraceEvidence): string {
  return `round trip ${Math.round(timing.roundTripMs)} ms, host stalled up to ${Math.round(timing.hostLagMs)} ms, the command counted ${evidence.tickedMs} ms, its trap ran ${evidence.stalledMs} ms after its last stamp before SIGTERM`;
}
