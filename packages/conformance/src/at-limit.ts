/**
 * A case that reached its time limit while the adapter still answered, and
 * while something outside the adapter slowed it, gets the evidence it needs
 * before its verdict: it runs again, alone, within a limit scaled by how much
 * slower the backend answers now than before the first case. A correct
 * adapter on a loaded machine, or one whose every command costs a login
 * shell, is slow for the machine's sake and must not fail for it. A case that
 * hung is not run again, nor one that ran out of time alone on a machine with
 * CPU to spare and a backend as fast as before: that is the adapter's own
 * time, and its message says how to raise the limit. So a broken adapter's
 * report is no slower for this. See ADR-0051.
 */
import type { Sandbox, SandboxFactory } from '@sandstream/types';
import type { CaseOutcome, LimitReached } from './run-case.js';
import { createSandbox, withTimeout } from './run-case.js';
import { SPARE_CORES } from './schedule.js';

/**
 * A case counts as still making progress at its limit when a call into the
 * adapter settled within this share of the limit before it: the adapter was
 * answering, only not fast enough. One that hung on a call (or waited on
 * output that never came) for longer is judged on its first run.
 */
export const PROGRESS_SHARE = 0.25;

/** The least and most a second run's limit is scaled by. */
export const RETRY_SCALE = { least: 2, most: 4 } as const;

/** Whether a case that reached its limit was still making progress there, and so is run again alone. */
export function stillProgressing(reached: LimitReached): boolean {
  return reached.lastSettledAgoMs !== undefined && reached.lastSettledAgoMs <= PROGRESS_SHARE * reached.limitMs;
}

/**
 * How many times slower a trivial command is now than before the first case:
 * the fastest of five on a fresh sandbox, after one to warm it, against the
 * probe's fastest. 1 when it cannot be measured, or when the difference is
 * under 5 ms (a local backend's round trip of 2 ms against 3 ms is noise, not
 * a slowed backend). Each step is bounded by `boundMs`.
 */
export async function measureSlowdown(factory: SandboxFactory, probeRoundTripMs: number | undefined, boundMs: number): Promise<number> {
  if (probeRoundTripMs === undefined) return 1;
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await withTimeout(createSandbox(factory), boundMs, () => new Error('the factory hung'));
    const times: number[] = [];
    for (let i = 0; i < 6; i++) {
      const started = performance.now();
      await withTimeout(sandbox.run(['true'], { timeout: boundMs }), boundMs, () => new Error('run() hung'));
      if (i > 0) times.push(performance.now() - started);
    }
    const fresh = Math.min(...times);
    return fresh - probeRoundTripMs >= 5 ? fresh / Math.max(probeRoundTripMs, 1) : 1;
  } catch {
    return 1;
  } finally {
    if (sandbox !== undefined) await withTimeout(sandbox.close(), boundMs, () => new Error('close() hung')).catch(() => undefined);
  }
}

/** A backend this many times slower than before the first case was slowed by something outside it. */
export const SLOWED = 1.5;

/** What slowed a case at its limit, as the kit saw it then. */
export interface Contention {
  /** The most other cases that held a slot beside it at once (not those that only waited). */
  readonly beside: number;
  /** The cores idle, on average, while it ran (undefined where the platform gives no counters). */
  readonly idleCores: number | undefined;
}

/** A second run's limit, and what the first run's report says of why it ran again. */
export interface Retry {
  readonly limitMs: number;
  /** "with up to 3 other cases beside it", "alone, with 0.10 cores idle", ... */
  readonly why: string;
}

/**
 * Whether a case at its limit runs again, and within what: when it was still
 * making progress, and it shared the machine (other cases beside it, or less
 * than {@link SPARE_CORES} idle) or the backend answers {@link SLOWED} times
 * slower now than before the first case (`slowdown`, measured once for all
 * the cases at their limit). The limit is the first scaled by that slowdown,
 * at least {@link RETRY_SCALE}.least, at most {@link RETRY_SCALE}.most times.
 * Undefined: the case is judged on its first run.
 */
export async function retryFor(reached: LimitReached, contention: Contention, slowdown: () => Promise<number>): Promise<Retry | undefined> {
  if (!stillProgressing(reached)) return undefined;
  const slower = await slowdown();
  const reasons: string[] = [contention.beside > 0 ? `with up to ${contention.beside} other case${contention.beside === 1 ? '' : 's'} beside it` : 'alone'];
  if (contention.idleCores !== undefined && contention.idleCores < SPARE_CORES) reasons.push(`with ${contention.idleCores.toFixed(2)} cores idle`);
  if (slower >= SLOWED) reasons.push(`while the backend answers ${slower.toFixed(1)} times slower than before the first case`);
  if (reasons.length === 1 && contention.beside === 0) return undefined;
  const scale = Math.min(RETRY_SCALE.most, Math.max(RETRY_SCALE.least, slower));
  return { limitMs: Math.ceil(reached.limitMs * scale), why: reasons.join(', ') };
}

/** What a case that was run again reports: its second run's outcome, saying so, with the first run's message. */
export function retriedOutcome(first: CaseOutcome, reached: LimitReached, retry: Retry, second: CaseOutcome): CaseOutcome {
  const settled = reached.lastSettledAgoMs === undefined ? '' : ` (a call into the adapter settled ${(reached.lastSettledAgoMs / 1000).toFixed(1)} s before)`;
  const firstRun = `its first run, ${retry.why}, reached its ${reached.limitMs} ms limit while the adapter still answered${settled}: ${first.message ?? ''}`;
  const verdict = second.status === 'pass' ? `passed when run again alone within ${retry.limitMs} ms` : `run again alone within ${retry.limitMs} ms: ${second.message ?? second.status}`;
  return { status: second.status, durationMs: Math.round((first.durationMs + second.durationMs) * 10) / 10, message: `${verdict}; ${firstRun}` };
}
