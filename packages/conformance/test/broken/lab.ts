/**
 * Where broken adapters are built and cleaned up after.
 *
 * Every sandbox made through a {@link Lab} runs its commands with a marker
 * variable (`SANDSTREAM_BROKEN_ADAPTER=<label>-<uuid>`) in their base
 * environment, which every process they start inherits. Broken adapters
 * leak processes on purpose; {@link Lab.cleanup} finds them by scanning
 * `/proc/<pid>/environ` for the lab's own marker and SIGKILLs them, so tests
 * running at the same time never touch each other's processes.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { markedProcesses as findMarked, type MarkedProcess } from '@sandstream/test-support/processes';
import { CAPABILITIES, type CapabilityManifest, type Sandbox } from '@sandstream/types';
import { defineSandbox, inheritedEnv, type CommandSpec, type ProcessDriver } from '@sandstream/types/runtime';
import { within } from '@sandstream/test-support/timing';
import {
  createLocalSandbox,
  localBackend,
  type LocalNative,
  type LocalSandboxOptions,
} from '@sandstream/adapter-local';

/** The grace period every lab sandbox uses, and the kit is told about. */
export const GRACE_MS = 300;
/** The marker variable. */
export const MARKER = 'SANDSTREAM_BROKEN_ADAPTER';

/** Turns the local adapter's driver into a defective one. */
export type DriverDefect = (driver: ProcessDriver, command: CommandSpec) => ProcessDriver;

/** A live (non-zombie) process and its command line. */
export type Survivor = MarkedProcess;

/** Live processes whose environment has `MARKER=<value>`, or any value when `value` ends with `*`. */
export function markedProcesses(value: string): Survivor[] {
  return value.endsWith('*') ? findMarked(MARKER, value.slice(0, -1), { prefix: true }) : findMarked(MARKER, value);
}

/** Builds the sandboxes of one test and cleans up after them. */
export class Lab {
  /** This lab's marker value. */
  readonly marker: string;
  readonly graceMs = GRACE_MS;
  private readonly sandboxes = new Set<Sandbox>();

  /** The markers of every lab made in this process, so a sweep leaves other test runs' processes alone. */
  static readonly markers = new Set<string>();

  /** `marker`: another process's lab, whose processes this one finds and cleans up (a testee's). */
  constructor(label: string, marker?: string) {
    this.marker = marker ?? `${label.replace(/[^a-z0-9-]/gi, '-')}-${randomUUID()}`;
    Lab.markers.add(this.marker);
  }

  /** The base environment of this lab's sandboxes: this process's, plus the marker. */
  env(): Record<string, string> {
    return { ...inheritedEnv(), [MARKER]: this.marker };
  }

  /** Registers a sandbox so that {@link cleanup} closes it. */
  track<S extends Sandbox>(sandbox: S): S {
    this.sandboxes.add(sandbox);
    return sandbox;
  }

  /** The real local adapter, with the lab's grace period and marker. */
  local(options: Omit<LocalSandboxOptions, 'env' | 'graceMs'> = {}): Sandbox<LocalNative> {
    return this.track(createLocalSandbox({ ...options, graceMs: GRACE_MS, env: this.env() }));
  }

  /**
   * The local adapter rebuilt from its public backend (`localBackend`, the
   * shared runtime's input as `createLocalSandbox` configures it) with
   * `defect` applied to each command's driver.
   */
  driver(
    defect: DriverDefect,
    options: { capabilities?: Partial<CapabilityManifest>; killWaitMs?: number; command?: (command: CommandSpec) => CommandSpec } = {},
  ): Sandbox<LocalNative> {
    const backend = localBackend({ graceMs: GRACE_MS, env: this.env() });
    // Only ever off, as createLocalSandbox's own option; output is byte-exact.
    const capabilities: CapabilityManifest = { ...backend.capabilities, 'binary-output': true };
    for (const name of CAPABILITIES) {
      if (options.capabilities?.[name] === false) capabilities[name] = false;
    }
    return this.track(
      defineSandbox<LocalNative>({
        ...backend,
        capabilities,
        ...(options.killWaitMs === undefined ? {} : { killWaitMs: options.killWaitMs }),
        createDriver: (asked) => {
          const command = options.command?.(asked) ?? asked;
          return defect(backend.createDriver(command), command);
        },
      }),
    );
  }

  /** Live processes started by this lab's sandboxes. */
  survivors(): Survivor[] {
    return markedProcesses(this.marker);
  }

  /**
   * SIGKILLs whatever this lab's sandboxes left running, then closes the
   * sandboxes. Returns what had survived (after a short grace, so that
   * processes already on their way out are not counted).
   */
  async cleanup(settleMs = 500): Promise<Survivor[]> {
    const deadline = Date.now() + settleMs;
    while (this.survivors().length > 0 && Date.now() < deadline) await sleep(25);
    const survivors = this.survivors();
    for (let round = 0; round < 20; round++) {
      const alive = this.survivors();
      if (alive.length === 0) break;
      for (const { pid } of alive) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      await sleep(25);
    }
    // Bounded: a close that hangs is the defect under test, not a reason to hang the suite.
    await within(5_000, Promise.allSettled([...this.sandboxes].map((sandbox) => sandbox.close())), 'closing the lab').catch(
      () => undefined,
    );
    this.sandboxes.clear();
    return survivors;
  }
}
