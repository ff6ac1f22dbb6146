/**
 * The soak under host limits: this process's descriptors or processes cut
 * short for the run (after the warm-up and baseline, lifted before the
 * checks), and the tally of starts the host had no room for. A start
 * refused with a typed error (`SpawnFailed`, `TransportError`) is the
 * promise kept and is counted, not reported; every other problem still is.
 */
import { liftSelfLimits, limitSelf } from '@sandstream/host-limits';
import type { AdapterName } from './targets.js';

/** The limits asked for, relative to the run: see `SoakOptions.hostLimits`. */
export interface HostLimitOptions {
  /** Descriptors beyond those the warmed baseline holds. */
  readonly openFiles?: number;
  /** Tasks beyond those this uid owns (the limit needs a uid other than root, which is exempt). */
  readonly processes?: number;
}

/** What the report says of a run under host limits. */
export interface HostLimitReport {
  /** The limits set (absolute). */
  readonly set: { readonly openFiles?: number; readonly processes?: number };
  /** Processes whose only problems were typed errors, per error class. */
  readonly refused: Readonly<Record<string, number>>;
  /** Commands whose own shell could not fork (their stdout checked as an exact prefix). */
  readonly forkRefused: number;
}

/**
 * How consume() describes a typed error of a start the host had no room for, or of a link that
 * broke for it; and the owner process of an `owner-killed` ending that the host had no room for
 * (its spawn, its threads: a Node.js process is a dozen tasks), which is this process's own start.
 */
const TYPED_FAILURE = /\b(SpawnFailed SPAWN_FAILED|\w+ TRANSPORT|OwnerRefused HOST):/;

/** One run's limits, from {@link HostLimitRun.apply} until {@link HostLimitRun.lift}. */
export class HostLimitRun {
  private readonly refused: Record<string, number> = {};
  private forkRefused = 0;

  private constructor(private readonly set: HostLimitReport['set']) {}

  /** Lowers this process's limits to `limits` over the baseline's `baselineFds` descriptors. */
  static async apply(limits: HostLimitOptions, baselineFds: number): Promise<HostLimitRun> {
    const set = await limitSelf({
      ...(limits.openFiles === undefined ? {} : { openFiles: baselineFds + limits.openFiles }),
      ...(limits.processes === undefined ? {} : { processes: limits.processes }),
    });
    return new HostLimitRun(set);
  }

  /** Whether a command's own fork may fail: local commands are this host's processes, under the same limit. */
  static forksMayFail(limits: HostLimitOptions | undefined, adapter: AdapterName): boolean {
    return limits?.processes !== undefined && adapter === 'local';
  }

  /** `problems` without the typed errors of a start the host had no room for (counted instead). */
  excuse(problems: readonly string[]): string[] {
    const typed = problems.find((problem) => TYPED_FAILURE.test(problem));
    if (typed === undefined) return [...problems];
    const kind = TYPED_FAILURE.exec(typed)![1]!.split(' ')[0]!;
    this.refused[kind] = (this.refused[kind] ?? 0) + 1;
    return problems.filter((problem) => !TYPED_FAILURE.test(problem));
  }

  /** A command's own shell could not fork. */
  noteForkRefused(): void {
    this.forkRefused++;
  }

  /** Raises the limits back (with no descriptor left too), before the checks. */
  lift(): Promise<void> {
    return liftSelfLimits();
  }

  report(): HostLimitReport {
    return { set: this.set, refused: { ...this.refused }, forkRefused: this.forkRefused };
  }
}
