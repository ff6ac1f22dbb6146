import type { BackgroundProcess, CommandInfo, Process, Sandbox } from '../contract.js';
import { AbortError, CapabilityNotSupported, SandboxClosed } from '../errors.js';
import type { AttachOptions, RunOptions, StreamOptions } from '../options.js';
import type { Capability, CapabilityManifest } from '../schema/capability.js';
import type { ExecResult } from '../schema/exec-result.js';
import { planRun, planStream, type CommandSpec, type ExecutionPlan } from './execution-plan.js';
import type { ProcessDriver } from './driver.js';
import { ProcessCore, type CoreSettings } from './process-core.js';
import { ProcessHandle } from './process-handle.js';
import { DEFAULT_REPLAY_BYTES } from './background-command.js';
import { BackgroundRegistry } from './background-registry.js';
import type { BackgroundBackend } from './background-backend.js';
import { within } from './timers.js';

/** Default time between SIGTERM and SIGKILL. */
export const DEFAULT_GRACE_MS = 2_000;
/** Default wait for an exit report after SIGKILL. */
export const DEFAULT_KILL_WAIT_MS = 5_000;
/** Default queued bytes at which a driver is paused. */
export const DEFAULT_HIGH_WATER_MARK = 4 * 1024 * 1024;

/**
 * What an adapter supplies; {@link defineSandbox} turns it into a full
 * {@link Sandbox} with validation, capability checks, the Process runtime
 * and close-terminates-everything.
 */
export interface SandboxBackend<Native = unknown> {
  readonly name: string;
  readonly capabilities: CapabilityManifest;
  readonly native: Native;
  /**
   * Time between SIGTERM and SIGKILL (default 2000 ms), in teardown and when
   * the leader exits while what it started lives on. The runtime owns this
   * timer: the driver is never told it.
   */
  readonly graceMs?: number;
  /** Wait for an exit report after SIGKILL before failing with `TransportError` (default 5000 ms). */
  readonly killWaitMs?: number;
  /**
   * Spec 1.4: within how many ms of its owner's loss a foreground command's
   * tree is gone, grace period included (`termination.ownerLossMs`). The
   * backend keeps it (a guardian, an owner lease), not the runtime: the
   * runtime dies with its owner. Absent: no such promise is stated.
   */
  readonly ownerLossMs?: number | undefined;
  /** Queued bytes at which the driver is paused (default 4 MiB). */
  readonly highWaterMark?: number;
  /**
   * Spec 1.2, with the `attach` capability: bytes of each stream of a
   * background command kept in host memory for a later attach (default
   * 4 MiB; `Infinity` keeps everything, for `replay-full`). A Process that
   * falls further behind than this (or the high-water mark, if larger)
   * rejects with `TransportError` instead of holding the command back.
   */
  readonly replayBytes?: number;
  /**
   * Spec 1.2: where the backend itself keeps background commands (a remote
   * adapter's records in the sandbox), so that other handles can list and
   * attach them. Without it, they are kept in this host process.
   */
  readonly background?: BackgroundBackend;
  /** Creates the driver of one command. Must not start it: the runtime calls `start()`. */
  createDriver(command: CommandSpec): ProcessDriver;
  /** Releases the backend after every process it started is gone. */
  close?(): Promise<void>;
}

function requiredCapabilities(plan: ExecutionPlan): Capability[] {
  const needed: Capability[] = [];
  // What the caller asked for: a terminal's own input is the `pty` capability's.
  if (plan.interactive || plan.input !== undefined) needed.push('stdin');
  if (plan.command.pty !== undefined) needed.push('pty');
  if (plan.command.limits !== undefined) needed.push('resource-limits');
  if (plan.command.user !== undefined) needed.push('user');
  if (plan.background) needed.push('attach');
  return needed;
}

/** The driver behind each foreground Process a sandbox of this runtime made. */
const foregroundDrivers = new WeakMap<object, ProcessDriver>();

/**
 * The driver behind `process`, a foreground Process that a sandbox made by
 * {@link defineSandbox} returned from `stream()`; undefined for any other
 * object (a background Process, another runtime's). For an adapter's
 * conformance hooks and fault tests, which act on the backend's link of one
 * command (the kit's `sever` hook); a caller of the contract has no use for it.
 *
 * @example
 * ```ts
 * import type { Process } from '@sandstream/types';
 * import { driverOf } from '@sandstream/types/runtime';
 * function hasDriver(process: Process): boolean {
 *   return driverOf(process) !== undefined;
 * }
 * ```
 */
export function driverOf(process: object): ProcessDriver | undefined {
  return foregroundDrivers.get(process);
}

/**
 * Builds a {@link Sandbox} from a backend. Adapter authors write only the
 * driver; everything the spec says about Processes is enforced here.
 *
 * @example
 * ```ts
 * import { defineSandbox, type ProcessDriver } from '@sandstream/types/runtime';
 * declare function myDriver(argv: readonly string[]): ProcessDriver;
 * const sandbox = defineSandbox({
 *   name: 'my-backend',
 *   capabilities: { streaming: true, stdin: false, 'resource-limits': false, user: false },
 *   native: undefined,
 *   createDriver: (command) => myDriver(command.argv),
 * });
 * ```
 */
export function defineSandbox<Native>(backend: SandboxBackend<Native>): Sandbox<Native> {
  const settings: CoreSettings = {
    graceMs: backend.graceMs ?? DEFAULT_GRACE_MS,
    killWaitMs: backend.killWaitMs ?? DEFAULT_KILL_WAIT_MS,
    highWaterMark: backend.highWaterMark ?? DEFAULT_HIGH_WATER_MARK,
  };
  const capabilities = Object.freeze({ ...backend.capabilities });
  const termination = Object.freeze({
    graceMs: settings.graceMs,
    killWaitMs: settings.killWaitMs,
    ...(backend.ownerLossMs === undefined ? {} : { ownerLossMs: backend.ownerLossMs }),
  });
  const live = new Set<ProcessCore>();
  /** Settled, while the driver's release() (an adapter's cleanup requests, say) is still under way. */
  const releasing = new Set<ProcessCore>();
  const replayBytes = backend.replayBytes ?? DEFAULT_REPLAY_BYTES;
  let counter = 0;
  let closing: Promise<void> | undefined;

  function check(operation: string, plan: ExecutionPlan): void {
    for (const capability of requiredCapabilities(plan)) {
      if (!capabilities[capability]) throw new CapabilityNotSupported(capability, operation);
    }
  }

  function launch(plan: ExecutionPlan, mode: 'run' | 'stream', given?: ProcessDriver): ProcessCore {
    const driver = given ?? backend.createDriver(plan.command);
    const core = new ProcessCore(`${backend.name}:${++counter}`, plan, driver, mode, settings);
    live.add(core);
    void core.whenSettled().then(async () => {
      live.delete(core);
      releasing.add(core);
      // Bounded: a release that never ends must not keep the command's core for ever.
      await within(core.whenReleased(), settings.killWaitMs);
      releasing.delete(core);
    });
    return core;
  }
  const background = new BackgroundRegistry(
    replayBytes,
    Math.max(replayBytes, settings.highWaterMark),
    (plan, driver) => launch(plan, 'stream', driver),
    backend.background,
  );

  const sandbox: Sandbox<Native> = {
    name: backend.name,
    capabilities,
    native: backend.native,
    termination,

    async run(argv: readonly string[], options?: RunOptions): Promise<ExecResult> {
      if (closing !== undefined) throw new SandboxClosed();
      const plan = planRun(argv, options);
      check('run()', plan);
      if (plan.signal?.aborted) throw new AbortError(undefined, { cause: plan.signal.reason });
      const core = launch(plan, 'run');
      try {
        return await core.result();
      } finally {
        await core.dispose().catch(() => undefined);
      }
    },

    stream(argv: readonly string[], options?: StreamOptions): BackgroundProcess & Process {
      if (closing !== undefined) throw new SandboxClosed();
      if (!capabilities.streaming) throw new CapabilityNotSupported('streaming', 'stream()');
      const plan = planStream(argv, options);
      check('stream()', plan);
      // The overloads give a BackgroundProcess only for background: true.
      if (plan.background) return background.start(plan) as BackgroundProcess;
      const core = launch(plan, 'stream');
      const handle = new ProcessHandle(core);
      foregroundDrivers.set(handle, core.driver);
      return handle as unknown as BackgroundProcess;
    },

    attach(commandId: string, options?: AttachOptions): Promise<BackgroundProcess> {
      return (async () => {
        if (closing !== undefined) throw new SandboxClosed();
        if (!capabilities.attach) throw new CapabilityNotSupported('attach', 'attach()');
        return background.attach(commandId, options);
      })();
    },

    commands(): Promise<readonly CommandInfo[]> {
      return (async () => {
        if (closing !== undefined) throw new SandboxClosed();
        if (!capabilities.attach) throw new CapabilityNotSupported('attach', 'commands()');
        return background.list();
      })();
    },

    close(): Promise<void> {
      closing ??= (async () => {
        // Background commands are cores of `live` too: detached or not, those this handle started
        // end here; those it only attached to end only where it still reads them.
        background.letGoOfOthers();
        // One budget for the whole close (section 9.6). The terminations run concurrently, each
        // bounded by its own sequence, and are always waited for. The drivers' releases (of the
        // commands disposed here, and of those that ended before close() and may still be
        // releasing) share what is left of one grace period and kill wait, instead of adding a
        // kill wait each. A release still under way past it goes on, bounded by its own wait.
        const started = performance.now();
        const cores = [...live];
        // Settled at once: a disposal that rejects while the terminations are awaited is not unhandled.
        const disposals = Promise.allSettled([...cores.map((core) => core.dispose()), ...[...releasing].map((core) => core.whenReleased())]);
        await Promise.allSettled(cores.map((core) => core.terminate()));
        const left = Math.max(0, settings.graceMs + settings.killWaitMs - (performance.now() - started));
        await within(disposals, left);
        background.clear();
        await backend.close?.();
      })();
      return closing;
    },

    [Symbol.asyncDispose](): Promise<void> {
      return sandbox.close();
    },
  };
  return sandbox;
}
