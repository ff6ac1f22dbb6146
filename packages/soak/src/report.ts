/** A soak report: what a run measured and the broken promises it found, and its printed form. */
import type { BehaviourName } from './behaviours.js';
import type { EndingName } from './endings.js';
import type { HostLimitReport } from './host-limits.js';
import type { ResourceSnapshot } from './snapshots.js';
import type { Percentiles } from './stats.js';
import type { PlanCapabilities } from './plan.js';
import type { AdapterName } from './targets.js';

/** One broken promise. */
export interface Violation {
  readonly kind:
    | 'process'
    | 'hang'
    | 'deadline'
    | 'survivors'
    | 'leftovers'
    | 'descriptors'
    | 'handles'
    | 'heap'
    | 'owner-loss'
    | 'unhandled-rejection'
    | 'uncaught-exception'
    | 'leak-warning';
  readonly message: string;
}

/** What a soak run measured and found. */
export interface SoakReport {
  readonly adapter: AdapterName;
  readonly seed: number;
  readonly count: number;
  readonly concurrency: number;
  readonly runId: string;
  readonly graceMs: number;
  /** The remote adapters' kill wait. */
  readonly killWaitMs: number;
  /** sha-256 (first 16 hex digits) of the plan of all `count` processes. */
  readonly planDigest: string;
  readonly capabilities: PlanCapabilities;
  /** Processes started and finished (with or without problems). */
  readonly started: number;
  readonly finished: number;
  readonly behaviours: Readonly<Record<BehaviourName, number>>;
  readonly endings: Readonly<Record<EndingName, number>>;
  /** Processes read to their end and compared byte for byte, and the bytes they held. */
  readonly verified: { readonly processes: number; readonly bytes: number };
  /** Bytes received by consumers in all. */
  readonly bytes: number;
  /**
   * Under `hostLimits`: the limits set (absolute), the processes whose only
   * problems were typed errors (`SpawnFailed`, `TransportError`: the host
   * had no room), per error class, and the commands whose own shell could
   * not fork (their stdout checked as an exact prefix).
   */
  readonly hostLimits?: HostLimitReport;
  readonly durationMs: number;
  readonly throughput: { readonly processesPerSecond: number; readonly mibPerSecond: number };
  /** From the consumer's ending action to the command settled (early endings only), ms. */
  readonly teardown: Percentiles;
  /**
   * The `owner-killed` ending: the shared sandbox's `termination.ownerLossMs` (undefined when it
   * states none), the bound the run held each tree to after its owner's SIGKILL (scaled for
   * load), and how soon each tree was gone.
   */
  readonly ownerLoss: { readonly statedMs: number | undefined; readonly boundMs: number; readonly gone: Percentiles };
  /** From the start of a process to the end of its checks, ms. */
  readonly processDuration: Percentiles;
  /** How late a 10 ms timer fired during the run, ms. */
  readonly loopDelay: Percentiles;
  /** The same in the emulator's process (the remote side), for the remote adapters. */
  readonly emulatorLoopDelay?: Percentiles;
  /** Before the target existed; after its warm-up (the baseline); after the run; after the target was closed. */
  readonly resources: {
    readonly beforeTarget: ResourceSnapshot;
    readonly baseline: ResourceSnapshot;
    readonly afterRun: ResourceSnapshot;
    readonly afterClose: ResourceSnapshot;
  };
  /** heapUsed after full collections, warmed baseline and after the run; undefined without --expose-gc. */
  readonly heap: { readonly baseline: number; readonly after: number; readonly growth: number; readonly bound: number } | undefined;
  readonly survivors: { readonly host: readonly string[]; readonly backend: readonly string[] };
  /** Files the adapter left in the sandbox after the run, or why the target does not look. */
  readonly leftovers: readonly string[] | { readonly notChecked: string };
  readonly unhandledRejections: number;
  readonly uncaughtExceptions: number;
  readonly violations: readonly Violation[];
  /** Violations left out of `violations` beyond the first 200. */
  readonly violationsOmitted: number;
}


function ms(p: Percentiles): string {
  return `p50 ${p.p50.toFixed(1)} ms, p99 ${p.p99.toFixed(1)} ms, max ${p.max.toFixed(1)} ms (n=${p.count})`;
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(2)} MiB`;
}

function counts(record: Readonly<Record<string, number>>): string {
  return Object.entries(record)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}

/** The report as lines of text: what ran, what was measured, and every violation. */
export function formatReport(report: SoakReport): string {
  const { resources, heap } = report;
  const lines = [
    `soak: adapter ${report.adapter}, seed ${report.seed}, ${report.count} processes, concurrency ${report.concurrency}, plan digest ${report.planDigest}`,
    `  grace ${report.graceMs} ms, kill wait ${report.adapter === 'local' ? 'the adapter\'s own' : `${report.killWaitMs} ms`}; capabilities: binary output ${report.capabilities.binary ? 'yes' : 'no (text only)'}, stdin ${report.capabilities.stdin ? 'yes' : 'no'}, attach ${report.capabilities.attach ? 'yes' : 'no'}`,
    `  started ${report.started}, finished ${report.finished} in ${(report.durationMs / 1000).toFixed(1)} s`,
    `  behaviours: ${counts(report.behaviours)}`,
    `  endings: ${counts(report.endings)}`,
    `  byte-exact: ${report.verified.processes} processes read to the end, ${mib(report.verified.bytes)} compared (sha-256 and length per stream); ${mib(report.bytes)} read in all`,
    ...(report.hostLimits === undefined
      ? []
      : [
          `  host limits: ${[
            report.hostLimits.set.openFiles === undefined ? undefined : `${report.hostLimits.set.openFiles} file descriptors`,
            report.hostLimits.set.processes === undefined ? undefined : `${report.hostLimits.set.processes} tasks for the uid`,
          ]
            .filter(Boolean)
            .join(', ')}; refused with a typed error: ${counts(report.hostLimits.refused) || 'none'}; commands whose own fork failed: ${report.hostLimits.forkRefused}`,
        ]),
    `  throughput: ${report.throughput.processesPerSecond.toFixed(1)} processes/s, ${report.throughput.mibPerSecond.toFixed(2)} MiB/s`,
    `  teardown latency: ${ms(report.teardown)}`,
    `  owner loss (tree gone after the owner's SIGKILL): ${ms(report.ownerLoss.gone)}; ownerLossMs ${report.ownerLoss.statedMs === undefined ? 'not stated' : `${report.ownerLoss.statedMs} ms`}, ${report.ownerLoss.boundMs} ms allowed under load`,
    `  process duration: ${ms(report.processDuration)}`,
    `  event loop (10 ms timer lateness): ${ms(report.loopDelay)}`,
    ...(report.emulatorLoopDelay === undefined ? [] : [`  emulator's event loop (10 ms timer lateness): ${ms(report.emulatorLoopDelay)}`]),
    `  surviving processes: host ${report.survivors.host.length}, emulator table ${report.survivors.backend.length}`,
    `  files left in the sandbox: ${'notChecked' in report.leftovers ? report.leftovers.notChecked : report.leftovers.length}`,
    `  file descriptors: ${resources.beforeTarget.fds} before the target, ${resources.baseline.fds} baseline, ${resources.afterRun.fds} after the run, ${resources.afterClose.fds} after closing the target`,
    `  active resources: ${total(resources.beforeTarget.resources)} before the target, ${total(resources.baseline.resources)} baseline, ${total(resources.afterRun.resources)} after the run, ${total(resources.afterClose.resources)} after closing the target`,
    heap === undefined
      ? '  heap: not measured (run node with --expose-gc)'
      : `  heap: ${mib(heap.baseline)} baseline, ${mib(heap.after)} after the run: growth ${mib(heap.growth)} (${mib((heap.growth / Math.max(1, report.finished)) * 1000)} per 1000 processes), bound ${mib(heap.bound)}`,
    `  unhandled rejections ${report.unhandledRejections}, uncaught exceptions ${report.uncaughtExceptions}`,
  ];
  if (report.violations.length === 0) {
    lines.push('  violations: none');
  } else {
    lines.push(`  violations: ${report.violations.length + report.violationsOmitted}`);
    for (const violation of report.violations) lines.push(`    [${violation.kind}] ${violation.message}`);
    if (report.violationsOmitted > 0) lines.push(`    ... and ${report.violationsOmitted} more`);
  }
  return lines.join('\n');
}

function total(resources: Readonly<Record<string, number>>): string {
  const entries = Object.entries(resources).sort(([a], [b]) => a.localeCompare(b));
  const sum = entries.reduce((n, [, c]) => n + c, 0);
  return `${sum} (${entries.map(([k, c]) => `${k} ${c}`).join(', ') || 'none'})`;
}
