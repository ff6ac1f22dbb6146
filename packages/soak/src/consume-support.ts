/**
 * What every ending's consumer shares: bounded waits, the naming of errors,
 * the check of a command's end, the settling of a Process the consumer
 * ended, and the last step of every process (what arrived was an exact
 * prefix; under a host process limit, a command's own failed fork).
 */
import { SandstreamError, type ExecResult, type Process, type Sandbox, type TerminalSize } from '@sandstream/types';
import type { PlannedEnd } from './behaviours.js';
import type { OwnerContext } from './consume-owner.js';
import type { OutputCheck } from './output-check.js';
import type { ProcessPlan } from './plan.js';
import type { Progress } from './progress.js';

/** What one process gave. */
export interface ProcessOutcome {
  /** Problems found (each becomes a violation naming the process). */
  readonly problems: string[];
  /** The consumer read both streams to their end, and they were compared byte for byte. */
  readonly verified: boolean;
  /** Bytes the consumer received. */
  readonly bytes: number;
  /**
   * Under a host process limit only ({@link ConsumeContext.forksMayFail}):
   * the command's own shell could not fork and said so on stderr; its
   * stdout was still checked as an exact prefix, and its end not at all.
   */
  readonly forkRefused?: boolean;
  /** From the consumer's ending action to the command being settled, in ms (undefined when it read to the end). */
  readonly teardownMs: number | undefined;
  /**
   * `owner-killed` only, once the owner was killed: how soon after the kill nothing of the
   * command's tree was left, or the survivors past the bound (a violation of SS-OWNER-1).
   */
  readonly ownerLoss?: { readonly goneMs: number } | { readonly outlived: string };
}

/** Where a process runs. */
export interface ConsumeContext {
  /** The shared sandbox. */
  readonly shared: Sandbox;
  /** A fresh sandbox (for `close-sandbox` and `owner-closed` endings). */
  openSandbox(): Promise<Sandbox>;
  /** Bound on any single wait for the runtime (a wait past it is a problem, not a hang of the whole run). */
  readonly waitBoundMs: number;
  /** The adapter delivers decoded text (no `binary-output`). */
  readonly textOnly: boolean;
  /**
   * The run is under a low process limit that the commands share (local
   * commands are this host's processes): a command's own fork may fail.
   */
  readonly forksMayFail?: boolean;
  /** How an owner process of the `owner-killed` ending joins the run's environment, and the bound it is held to. */
  readonly owner?: OwnerContext;
}

export const WAIT_TIMEOUT = Symbol('wait-timeout');

/** `promise`, or {@link WAIT_TIMEOUT} once `ms` passed. */
export async function bounded<T>(promise: Promise<T>, ms: number): Promise<T | typeof WAIT_TIMEOUT> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<typeof WAIT_TIMEOUT>((resolve) => (timer = setTimeout(() => resolve(WAIT_TIMEOUT), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** One line naming an error, its code, and for a failed disposal both errors. */
/** The `pty` option of a command planned on a terminal (spec 1.5), or nothing. */
export function terminalOf(plan: ProcessPlan): { pty?: TerminalSize } {
  return plan.command.pty === undefined ? {} : { pty: plan.command.pty };
}

export function describeThrown(error: unknown): string {
  // `await using` compiled for Node 20 throws an Error named SuppressedError carrying both errors.
  if (error instanceof Error && error.name === 'SuppressedError' && 'error' in error && 'suppressed' in error) {
    return `disposal failed with ${describeThrown(error.error)} (while leaving with ${describeThrown(error.suppressed)})`;
  }
  if (error instanceof Error) return `${error.constructor.name}${error instanceof SandstreamError ? ` ${error.code}` : ''}: ${error.message}`;
  return String(error);
}

/** The command ended as planned: its exit code or signal, and no timeout. */
export function checkEnd(result: ExecResult, end: PlannedEnd, problems: string[]): void {
  if (result.exitCode !== end.exitCode || result.signal !== end.signal) {
    problems.push(`ended with exitCode ${result.exitCode} signal ${result.signal}, the command ends with exitCode ${end.exitCode} signal ${end.signal}`);
  }
  if (result.timedOut) problems.push('result says timedOut, but no timeout was set');
}

/** After the consumer's own ending: the Process must be settled, and `wait()` settle within the bound. */
export async function verifySettled(proc: Process, context: ConsumeContext, progress: Progress, problems: string[]): Promise<void> {
  if (!proc.exited) problems.push('not exited after its scope was left');
  progress.stage = 'waiting';
  const waited = await bounded(
    proc.wait().then(
      () => undefined,
      () => undefined,
    ),
    context.waitBoundMs,
  );
  if (waited === WAIT_TIMEOUT) problems.push(`wait() did not settle within ${context.waitBoundMs} ms after the scope was left`);
}

/**
 * The last step of every process: each check's stream, where not read to
 * its end and compared, must be an exact prefix of what it expects; under a
 * host process limit, a command whose own shell could not fork keeps only
 * the problems of settling and its stdout's prefix.
 */
export function conclude(
  plan: ProcessPlan,
  context: ConsumeContext,
  checks: readonly OutputCheck[],
  outcome: { problems: string[]; verified: boolean; teardownMs: number | undefined },
): ProcessOutcome {
  const { problems, verified, teardownMs } = outcome;
  const bytes = checks.reduce((sum, check) => sum + check.received(), 0);
  if (context.forksMayFail && checks.some((check) => check.forkRefused())) {
    // What the command wrote before its fork failed is still exact; its end and the rest are its own.
    const settled = problems.filter((problem) => /settle|not exited|did not resolve|did not end|close\(\) rejected/.test(problem));
    for (const check of checks) {
      const stdout = check.stdoutPrefixProblem();
      if (stdout !== undefined && plan.command.prefixWhenEnded) settled.push(`stdout differs from what the command wrote before its fork failed: ${stdout}`);
    }
    return { problems: settled, verified: false, bytes, teardownMs, forkRefused: true };
  }
  if (!verified && plan.command.prefixWhenEnded) {
    for (const check of checks) {
      const prefix = check.prefixProblem();
      if (prefix !== undefined) problems.push(`output differs from what the command wrote: ${prefix}`);
    }
  }
  return { problems, verified, bytes, teardownMs };
}
