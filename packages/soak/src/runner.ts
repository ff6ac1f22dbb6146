/**
 * The soak run: `count` planned processes through one adapter, `concurrency`
 * at a time, each ended as its plan says; then the checks of what the run
 * left behind. The result is a report whose `violations` list is empty when
 * every check held.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Sandbox } from '@sandstream/types';
import { markedProcesses, signalEach, TIMED_OUT, within } from '@sandstream/types/runtime';
import { BEHAVIOURS, type BehaviourName } from './behaviours.js';
import { consume, describeThrown, type ProcessOutcome } from './consume.js';
import { ownerLossBound, type OwnerContext } from './consume-owner.js';
import { ENDINGS, type EndingName } from './endings.js';
import { HostLimitRun, type HostLimitOptions } from './host-limits.js';
import { planCapabilities, planDigest, planProcess } from './plan.js';
import { canCollect, LoopDelayMonitor, settledHeap } from './self-measures.js';
import { excess, extraFds, resourceDelta, snapshot, type ResourceSnapshot } from './snapshots.js';
import { Progress } from './progress.js';
import type { SoakReport, Violation } from './report.js';
import { percentiles } from './stats.js';
import { createTarget, MARKER, warmProcess, type AdapterName, type Target } from './targets.js';

/** Options of {@link runSoak}. */
export interface SoakOptions {
  readonly adapter: AdapterName;
  /** Processes to run. */
  readonly count: number;
  /** Processes in flight at once. */
  readonly concurrency: number;
  /** The seed the whole plan derives from. */
  readonly seed: number;
  /** Bound on the whole run (processes stop being started once it passed), in ms. Default 30 min. */
  readonly deadlineMs?: number;
  /** Bound on one process's stillness (no output, no write to its input, no step taken), in ms; past it the process is reported as hung. Default 120 s. */
  readonly processBoundMs?: number;
  /** Grace period between SIGTERM and SIGKILL. Default 250 ms. */
  readonly graceMs?: number;
  /**
   * The remote adapters' kill wait, in ms. Default 20 s: the adapters' own
   * default (5 s) is for a machine with CPU to spare; a soak at concurrency 50
   * on two busy cores starves the emulator past it (a TransportError, with
   * nothing left running), which says more about the machine than the adapter.
   */
  readonly killWaitMs?: number;
  /** Largest growth of the heap after the run over the warmed baseline, in bytes. Default 8 MiB. */
  readonly heapBoundBytes?: number;
  /** Bound on the waits for what the run left to go away (processes, descriptors, handles), in ms. Default 20 s. */
  readonly settleBoundMs?: number;
  /** Called after each finished process. */
  readonly onProgress?: (finished: number, count: number) => void;
  /**
   * Runs the processes with this host's resources cut short (after the
   * warm-up and baseline, lifted before the checks): `openFiles` more
   * descriptors than the baseline holds, `processes` more tasks than this
   * uid owns (see {@link HostLimits}; the process limit needs a uid other
   * than root, which is exempt from it). Starts the host has no room for
   * must fail with `SpawnFailed` or `TransportError` (counted as
   * `refused`, not violations); everything else is checked as usual.
   */
  readonly hostLimits?: HostLimitOptions;
  /**
   * Wraps every sandbox the run uses, for tests of the runner itself (a
   * sandbox that drops a chunk or leaves a process must fail the run).
   */
  readonly decorate?: (sandbox: Sandbox) => Sandbox;
  /**
   * Local only, for tests of the runner itself: `false` builds the owner processes' sandboxes
   * (the `owner-killed` ending) without the adapter's guardian, so their trees outlive them.
   */
  readonly ownerGuard?: boolean;
  /** Docker only: the OCI runtime of the run's container (`'runsc'`: gVisor, registered on the soak's dockerd). */
  readonly dockerRuntime?: string;
}

const MAX_VIOLATIONS = 200;

/** Polls `check` every 50 ms until it holds or `ms` passed; returns whether it held. */
async function eventually(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function hostSurvivors(runId: string): string[] {
  return markedProcesses(MARKER, runId).map((p) => `${p.pid} ${p.cmdline.slice(0, 200)}`);
}

/** Runs a soak and checks what it left; never throws for a broken promise of the adapter (that is a violation), only for a harness failure. */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const { adapter, count, concurrency, seed } = options;
  const deadlineMs = options.deadlineMs ?? 30 * 60_000;
  const processBoundMs = options.processBoundMs ?? 120_000;
  const graceMs = options.graceMs ?? 250;
  const killWaitMs = options.killWaitMs ?? 20_000;
  const heapBound = options.heapBoundBytes ?? 8 * 1024 * 1024;
  const settleBoundMs = options.settleBoundMs ?? 20_000;
  const runId = randomUUID();
  const violations: Violation[] = [];
  let omitted = 0;
  const violate = (kind: Violation['kind'], message: string): void => {
    if (violations.length < MAX_VIOLATIONS) violations.push({ kind, message });
    else omitted++;
  };

  let unhandledRejections = 0;
  let uncaughtExceptions = 0;
  const onRejection = (reason: unknown): void => {
    unhandledRejections++;
    violate('unhandled-rejection', `unhandled rejection: ${String((reason as Error)?.stack ?? reason).slice(0, 500)}`);
  };
  const onException = (error: Error): void => {
    uncaughtExceptions++;
    violate('uncaught-exception', `uncaught exception: ${String(error?.stack ?? error).slice(0, 500)}`);
  };
  // The runtime's safety net firing means a Process was collected while running; listeners piling up on one emitter or signal are a leak in the making.
  const onWarning = (warning: Error & { code?: string }): void => {
    if (warning.code === 'SANDSTREAM_PROCESS_LEAKED') violate('leak-warning', `the runtime's safety net fired: ${warning.message}`);
    else if (warning.name === 'MaxListenersExceededWarning') violate('leak-warning', warning.message);
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  process.on('warning', onWarning);

  // Sized before the baseline, so their memory is not counted as growth.
  const teardown = new Float64Array(count);
  let teardowns = 0;
  const durations = new Float64Array(count);
  const ownerLossTimes = new Float64Array(count);
  let ownerLosses = 0;
  const behaviours = Object.fromEntries(BEHAVIOURS.map((b) => [b, 0])) as Record<BehaviourName, number>;
  const endings = Object.fromEntries(ENDINGS.map((e) => [e, 0])) as Record<EndingName, number>;

  // The first spawn with pipes opens a descriptor the process keeps for good (/dev/null): not the target's.
  await new Promise<void>((resolve) => {
    const child = spawn('true', [], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.once('close', () => setImmediate(resolve)).once('error', () => resolve());
  });
  await warmProcess(adapter);
  const beforeTarget = snapshot();
  let target: Target | undefined;
  try {
    target = await createTarget(adapter, {
      runId,
      graceMs,
      killWaitMs,
      ...(options.ownerGuard === undefined ? {} : { ownerGuard: options.ownerGuard }),
      ...(options.dockerRuntime === undefined ? {} : { dockerRuntime: options.dockerRuntime }),
    });
    const decorate = options.decorate ?? ((sandbox: Sandbox) => sandbox);
    const shared = decorate(target.shared);
    const capabilities = planCapabilities(shared.capabilities);
    const digest = planDigest(seed, count, capabilities);
    const openSandbox = async (): Promise<Sandbox> => decorate(await target!.openSandbox());
    const limits = options.hostLimits;
    const owner = ownerContext(target, shared, { runId, graceMs, killWaitMs }, limits !== undefined);
    const context = {
      owner,
      shared,
      openSandbox,
      waitBoundMs: graceMs + killWaitMs + 10_000,
      textOnly: !capabilities.binary,
      forksMayFail: HostLimitRun.forksMayFail(limits, adapter),
    };

    // Warm-up: the first command, stream and sandbox open what stays open for good (libuv's, the SDKs' agents,
    // and a handle's helper channel, which its first teardown opens: Docker's, one exec per account).
    await shared.run(['true']);
    await shared.run(['sleep', '30'], { timeout: 100 });
    {
      const own = await openSandbox();
      await using proc = own.stream(['sh', '-c', 'echo warm']);
      for await (const _ of proc) void _;
      await own.close();
    }
    await eventually(() => hostSurvivors(runId).length === 0, settleBoundMs);
    const heapBaseline = await settledHeap();
    const baseline = snapshot();

    const limited = limits === undefined ? undefined : await HostLimitRun.apply(limits, baseline.fds);
    const monitor = new LoopDelayMonitor();
    await target.emulatorLoop?.start();
    const started = performance.now();
    const deadline = started + deadlineMs;
    let next = 0;
    let finished = 0;
    let bytes = 0;
    let verifiedProcesses = 0;
    let verifiedBytes = 0;

    const runOne = async (index: number): Promise<void> => {
      const plan = planProcess(seed, index, capabilities);
      behaviours[plan.command.behaviour]++;
      endings[plan.ending.kind]++;
      const t0 = performance.now();
      const progress = new Progress();
      const still = progress.stillFor(processBoundMs);
      const outcome = await Promise.race([
        consume(plan, context, progress).catch(
          (error: unknown): ProcessOutcome => ({
            problems: [`failed: ${describeThrown(error)}`],
            verified: false,
            bytes: 0,
            teardownMs: undefined,
          }),
        ),
        still.hung,
      ]);
      still.stop();
      const label = `process ${index} (seed ${seed}, ${plan.command.behaviour}${plan.command.lingers ? ', lingering' : ''}, ending ${JSON.stringify(plan.ending)})`;
      if (outcome === 'hung') {
        violate('hang', `${label} made no progress for ${processBoundMs} ms, ${Math.round(performance.now() - t0)} ms after its start (${progress.describe()})`);
        return;
      }
      durations[index] = performance.now() - t0;
      if (outcome.forkRefused) limited?.noteForkRefused();
      // The host had no room: a typed error is the promise kept; anything else still counts.
      const problems = limited === undefined ? outcome.problems : limited.excuse(outcome.problems);
      for (const problem of problems) violate('process', `${label}: ${problem}`);
      bytes += outcome.bytes;
      if (outcome.verified) {
        verifiedProcesses++;
        verifiedBytes += outcome.bytes;
      }
      if (outcome.teardownMs !== undefined) teardown[teardowns++] = outcome.teardownMs;
      if (outcome.ownerLoss !== undefined && 'goneMs' in outcome.ownerLoss) ownerLossTimes[ownerLosses++] = outcome.ownerLoss.goneMs;
      if (outcome.ownerLoss !== undefined && 'outlived' in outcome.ownerLoss) violate('owner-loss', `${label}: ${outcome.ownerLoss.outlived}`);
    };

    const worker = async (): Promise<void> => {
      while (next < count) {
        if (performance.now() > deadline) return;
        const index = next++;
        await runOne(index);
        finished++;
        options.onProgress?.(finished, count);
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, () => worker()));
    } finally {
      await limited?.lift();
    }
    const durationMs = performance.now() - started;
    const loopDelay = monitor.stop();
    const emulatorLoopDelay = await target.emulatorLoop?.stop();
    if (endings['owner-killed'] > 0 && owner.statedMs === undefined) {
      violate('owner-loss', `the shared sandbox states no termination.ownerLossMs (spec 1.4, SS-OWNER-2); the owner-killed ending held its commands to ${owner.boundMs} ms`);
    }
    if (next < count) violate('deadline', `the run passed its deadline of ${deadlineMs} ms after starting ${next} of ${count} processes (seed ${seed})`);

    // Nothing may survive: the host's process table (every command carries the run's marker), and the backend's own.
    await eventually(async () => hostSurvivors(runId).length === 0 && (await target!.backendSurvivors()).length === 0, settleBoundMs);
    const survivors = { host: hostSurvivors(runId), backend: await target.backendSurvivors() };
    if (survivors.host.length > 0) violate('survivors', `${survivors.host.length} marked process(es) alive after the run: ${survivors.host.slice(0, 10).join('; ')}`);
    if (survivors.backend.length > 0) violate('survivors', `${survivors.backend.length} process(es) in the emulator's table after the run: ${survivors.backend.slice(0, 10).join('; ')}`);
    // Every background ending forgets its command or closes its owner: the shared sandbox keeps no record (ADR-0036).
    const records = capabilities.attach ? (await shared.commands!()).map((r) => `${r.commandId} ${r.state} ${JSON.stringify(r.argv).slice(0, 120)}`) : [];
    if (records.length > 0) violate('leftovers', `${records.length} background command record(s) the shared sandbox lists after the run: ${records.slice(0, 10).join('; ')}`);
    // Nor may the adapter's own files for commands that are over.
    const look = target.leftovers;
    let leftovers: readonly string[] | { readonly notChecked: string };
    if (typeof look === 'function') {
      await eventually(async () => (await look()).length === 0, settleBoundMs);
      leftovers = await look();
    } else {
      leftovers = look;
    }
    if (!('notChecked' in leftovers) && leftovers.length > 0) violate('leftovers', `${leftovers.length} file(s) the adapter left in the sandbox after the run: ${leftovers.slice(0, 10).join('; ')}`);

    // Descriptors and handles back to the warmed baseline, with the shared sandbox still open (idle keep-alive connections get the bound to close).
    await eventually(() => {
      const now = snapshot();
      return now.fds <= baseline.fds && excess(now, baseline).length === 0;
    }, settleBoundMs);
    const afterRun = snapshot();
    if (afterRun.fds > baseline.fds) violate('descriptors', `${afterRun.fds} open file descriptors after the run, ${baseline.fds} at the baseline: ${extraFds(afterRun, baseline)}`);
    if (excess(afterRun, baseline).length > 0) {
      violate('handles', `active resources after the run exceed the baseline: ${excess(afterRun, baseline).join(', ')} (all changes: ${resourceDelta(afterRun, baseline)})`);
    }

    const heapAfter = await settledHeap();
    const heap =
      heapBaseline === undefined || heapAfter === undefined
        ? undefined
        : { baseline: heapBaseline, after: heapAfter, growth: heapAfter - heapBaseline, bound: heapBound };
    if (heap !== undefined && heap.growth > heap.bound) {
      violate('heap', `the heap grew by ${(heap.growth / 2 ** 20).toFixed(2)} MiB over ${finished} processes, past the bound of ${(heap.bound / 2 ** 20).toFixed(2)} MiB`);
    }

    const closing = target;
    target = undefined;
    // A reader that never reads again holds its command's end back (spec 9.8), and close() waits for it: bounded here.
    if ((await within(closing.close(), settleBoundMs)) === TIMED_OUT) {
      violate('hang', `closing the target did not finish within ${settleBoundMs} ms (seed ${seed})`);
    }
    await eventually(() => {
      const now = snapshot();
      return now.fds <= beforeTarget.fds && excess(now, beforeTarget).length === 0;
    }, settleBoundMs);
    const afterClose = snapshot();
    if (afterClose.fds > beforeTarget.fds) violate('descriptors', `${afterClose.fds} open file descriptors after closing the target, ${beforeTarget.fds} before it existed: ${extraFds(afterClose, beforeTarget)}`);
    if (excess(afterClose, beforeTarget).length > 0) {
      violate('handles', `active resources after closing the target exceed those before it existed: ${excess(afterClose, beforeTarget).join(', ')} (all changes: ${resourceDelta(afterClose, beforeTarget)})`);
    }
    const hostAfterClose = hostSurvivors(runId);
    if (hostAfterClose.length > 0 && survivors.host.length === 0) {
      violate('survivors', `${hostAfterClose.length} marked process(es) alive after closing the target: ${hostAfterClose.slice(0, 10).join('; ')}`);
    }

    return {
      adapter,
      seed,
      count,
      concurrency,
      runId,
      graceMs,
      killWaitMs,
      planDigest: digest,
      capabilities,
      started: next,
      finished,
      behaviours,
      endings,
      verified: { processes: verifiedProcesses, bytes: verifiedBytes },
      bytes,
      ...(limited === undefined ? {} : { hostLimits: limited.report() }),
      durationMs,
      throughput: { processesPerSecond: (finished / durationMs) * 1000, mibPerSecond: (bytes / 2 ** 20 / durationMs) * 1000 },
      teardown: percentiles(teardown.subarray(0, teardowns)),
      ownerLoss: { statedMs: owner.statedMs, boundMs: owner.boundMs, gone: percentiles(ownerLossTimes.subarray(0, ownerLosses)) },
      processDuration: percentiles(durations.subarray(0, next)),
      loopDelay,
      ...(emulatorLoopDelay === undefined ? {} : { emulatorLoopDelay }),
      resources: { beforeTarget, baseline, afterRun, afterClose },
      heap,
      survivors,
      leftovers,
      unhandledRejections,
      uncaughtExceptions,
      violations,
      violationsOmitted: omitted,
    };
  } finally {
    if (target !== undefined) await within(target.close().catch(() => undefined), settleBoundMs);
    // Whatever a failed run left is killed, so that one run cannot poison the next.
    signalEach(markedProcesses(MARKER, runId).map((p) => p.pid));
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
    process.off('warning', onWarning);
  }
}

export { canCollect };
export type { ResourceSnapshot };

/**
 * What the `owner-killed` ending needs: where an owner process opens its sandbox, and the bound
 * it is held to (the shared sandbox's `ownerLossMs`, or the grace period and kill wait plus 10 s
 * where it states none, as the conformance kit falls back), scaled for load.
 */
function ownerContext(target: Target, shared: Sandbox, settings: { runId: string; graceMs: number; killWaitMs: number }, hostLimited: boolean): OwnerContext {
  const termination = shared.termination;
  const statedMs = termination?.ownerLossMs;
  const fallback = (termination?.graceMs ?? settings.graceMs) + (termination?.killWaitMs ?? settings.killWaitMs) + 10_000;
  return {
    join: { place: target.owner, marker: { name: MARKER, value: settings.runId }, graceMs: settings.graceMs, killWaitMs: settings.killWaitMs },
    statedMs,
    boundMs: ownerLossBound(statedMs ?? fallback),
    hostLimited,
    ...(target.marked === undefined ? {} : { marked: target.marked }),
  };
}
