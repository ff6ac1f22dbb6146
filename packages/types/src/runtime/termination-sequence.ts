import type { Signal } from '../options.js';
import { TransportError } from '../errors.js';
import type { ExitStatus, ProcessDriver } from './driver.js';
import { TIMED_OUT, within } from './timers.js';
import { asError, asTransport } from './transport.js';

/** What the termination sequence drives: a {@link ProcessCore}, seen through the parts it needs. */
export interface TerminationTarget {
  readonly settled: boolean;
  /** True while the driver is paused because the reader is behind. */
  readonly paused: boolean;
  readonly settings: { readonly graceMs: number; readonly killWaitMs: number };
  /** Set once the driver reported that the leader ended while its tree may live on. */
  readonly leaderStatus: ExitStatus | undefined;
  startedWithin(ms: number): Promise<boolean>;
  settlesWithin(ms: number): Promise<boolean>;
  readonly driver: ProcessDriver;
  /** The command runs on a terminal: SIGHUP goes first, as a closed terminal sends it (spec 1.5). */
  readonly hangsUp?: boolean;
  whenResumed(): Promise<void>;
  whenSettled(): Promise<void>;
  failTransport(error: Error): void;
}

/** Sends a signal through the driver, waiting at most `ms` for the backend to confirm it. */
export async function sendSignal(driver: ProcessDriver, signal: Signal, ms: number): Promise<'sent' | 'timeout' | Error> {
  const sending = driver.signal(signal).then(
    () => 'sent' as const,
    (error: unknown) => asError(error),
  );
  const outcome = await within(sending, ms);
  return outcome === TIMED_OUT ? 'timeout' : outcome;
}

/**
 * `Process.kill()`: one signal to the tree, once the start is confirmed,
 * bounded by the kill wait; a no-op once the command settled.
 */
export async function signalOnce(target: TerminationTarget, signal: Signal): Promise<void> {
  const { killWaitMs } = target.settings;
  if (!(await target.startedWithin(killWaitMs))) {
    throw new TransportError(`the backend did not confirm the start within ${killWaitMs} ms`);
  }
  if (target.settled) return;
  const outcome = await sendSignal(target.driver, signal, killWaitMs);
  if (outcome === 'timeout') throw new TransportError(`the backend did not confirm ${signal} within ${killWaitMs} ms`);
  if (outcome instanceof Error) throw asTransport(outcome, `sending ${signal}`);
}

/** How the leader ended, in words. */
function describeLeader(status: ExitStatus): string {
  return status.signal !== null ? `by ${status.signal}` : `with code ${String(status.exitCode)}`;
}

/**
 * The one termination sequence, used for teardown (dispose, timeout, abort,
 * a throwing callback) and for winding down what a leader left behind:
 * SIGTERM, then SIGCONT (a stopped process cannot act on SIGTERM until it
 * is continued), SIGKILL after the grace period, then a bounded wait for
 * the driver's exit report, after which the command is declared lost with
 * a TransportError. Runs on the runtime's own timers, so it completes even
 * when the caller's signal has long been aborted, and every signal the
 * backend never confirms counts against the step it belongs to.
 */
export async function runTermination(target: TerminationTarget): Promise<void> {
  const { graceMs, killWaitMs } = target.settings;
  // A start that is never confirmed cannot be signalled: after the whole
  // budget of the sequence the command is declared lost (the driver's
  // release() is then asked to abandon the start).
  if (!(await target.startedWithin(graceMs + killWaitMs))) {
    target.failTransport(new TransportError('the backend never confirmed the start; the command may be running'));
    return;
  }
  if (target.settled) return;
  // An interactive shell ignores SIGTERM and exits on SIGHUP, hanging its jobs up: without it
  // every `bash -i` would wait out the grace period. SIGTERM follows at once (ADR-0052, T5).
  if (target.hangsUp === true) await sendSignal(target.driver, 'SIGHUP', graceMs);
  if (target.settled) return;
  const steps: Array<[Signal, number]> = [
    ['SIGTERM', graceMs],
    ['SIGKILL', killWaitMs],
  ];
  for (const [signal, wait] of steps) {
    let deadline = performance.now() + wait;
    const left = (): number => Math.max(0, deadline - performance.now());
    const outcome = await sendSignal(target.driver, signal, wait);
    if (target.settled) return;
    if (outcome instanceof Error) {
      if (signal === 'SIGKILL') {
        target.failTransport(outcome);
        return;
      }
      continue; // SIGTERM could not be sent: waiting for its effect is pointless
    }
    if (signal === 'SIGTERM' && outcome === 'sent') {
      // The grace period follows the sending of SIGTERM (section 9.8, step 2): a backend that
      // takes a while to deliver it (a remote helper under load took 0.8 s) must not shorten the
      // time the command's handler gets. A SIGTERM never confirmed still counts against it.
      deadline = performance.now() + wait;
      // A backend that cannot send SIGCONT loses nothing but that.
      await sendSignal(target.driver, 'SIGCONT', left());
    }
    if (target.settled) return;
    if (await target.settlesWithin(left())) return;
  }
  // A driver reports the exit once all output is delivered. While it is
  // paused because the reader is behind, a missing report is the reader's
  // pace, not a broken link: each time reading resumes, the driver gets
  // another window to finish.
  while (target.paused) {
    await Promise.race([target.whenSettled(), target.whenResumed()]);
    if (target.settled) return;
    if (await target.settlesWithin(killWaitMs)) return;
  }
  const leader = target.leaderStatus;
  target.failTransport(
    new TransportError(
      leader === undefined
        ? `no exit was reported within ${killWaitMs} ms of SIGKILL`
        : `the command's leader ended ${describeLeader(leader)}, but what it started was not reported gone ` +
          `within ${killWaitMs} ms of SIGKILL: a process of its tree may still be alive`,
    ),
  );
}
