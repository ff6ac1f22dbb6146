import { InvalidArgument, type BackgroundProcess, type Process, type Sandbox } from '@sandstream/types';

/**
 * What an adapter module may export beside its factory, as
 * `export const conformanceHooks: ConformanceHooks`. The CLI reads it from
 * the module; `runConformance` and `describeConformance` take it as `hooks`.
 */
export interface ConformanceHooks {
  /** Once before the first case: start a daemon, open a connection. */
  setup?(): Promise<void> | void;
  /** Once after the last case, also after failures (and after a setup that threw). */
  teardown?(): Promise<void> | void;
  /**
   * A second handle on the environment `sandbox` runs in, used to observe it
   * after `sandbox.close()`. Its own close() must not destroy the
   * environment. Where close() destroys the environment (the adapter owns
   * it), the observer's commands fail after close(), which the kit takes as
   * proof. Needed where each factory call is its own environment (a VM, a
   * PID namespace): without it the kit cannot see such a sandbox's processes
   * from another one, and `teardown.close` is a harness error.
   */
  attach?(sandbox: Sandbox): Promise<Sandbox>;
  /**
   * Cuts every connection this OS process holds to the command `process`
   * reads, as a proxy that drops them would, without telling the adapter.
   * Returns how many links it cut, where it knows: 0 is a harness error
   * (nothing was tested).
   *
   * - A background Process (spec 1.2, for an adapter that declares
   *   `attach-reconnect`): the kit then expects the adapter to re-establish
   *   them within its bound (every byte once) or to reject with
   *   `TransportError` carrying the `commandId`, the command running on
   *   (SS-RECON-2). Without the hook, `attach.link-lost` is a harness error
   *   that names it.
   * - A foreground Process (spec 1.4, `owner.link-lost`): the kit expects the
   *   link re-established, or the command's tree ended by the termination
   *   sequence within `termination.ownerLossMs` (SS-OWNER-1). An adapter whose
   *   commands hold no link (local processes) leaves the hook out, and the
   *   case is skipped with that reason.
   */
  sever?(process: BackgroundProcess | Process): Promise<number | void> | number | void;
  /**
   * Spec 1.4, `owner.crash` (SS-OWNER-1): how a second OS process becomes an
   * owner of commands on the environment `sandbox` runs in. The kit starts a
   * Node.js process that loads `module` (default export factory and
   * `conformanceHooks`, as the CLI loads an adapter module) with `env` added
   * to its environment, runs its `setup` hook and factory, starts a command
   * tree in the foreground, and kills that process with SIGKILL. The tree
   * must be seen from `sandbox`, so `env` says how the module's factory
   * reaches the same environment (a container, a remote sandbox by its id);
   * where every factory call of the module shares one environment (local
   * processes on one host), the hook may be left out. `module` defaults to
   * the run's `ownerModule` (the module the CLI loaded).
   */
  owner?(sandbox: Sandbox): Promise<OwnerProcess> | OwnerProcess;
}

/**
 * What the `owner` hook answers: how a second OS process makes a sandbox on
 * a given sandbox's environment (spec 1.4, `owner.crash`).
 *
 * @example
 * ```ts
 * import type { ConformanceHooks } from '@sandstream/conformance';
 * export const conformanceHooks: ConformanceHooks = {
 *   // The owner process's factory reaches the same container by the id this sandbox holds.
 *   owner: (sandbox) => ({ env: { MY_CONTAINER: String((sandbox.native as { id: string }).id) } }),
 * };
 * ```
 */
export interface OwnerProcess {
  /** The adapter module the process loads: a file path or an installed package name. Default: the run's `ownerModule`. */
  readonly module?: string;
  /** Environment variables added to the process's, under which the module's setup and factory reach the environment. */
  readonly env?: Readonly<Record<string, string>>;
}

const HOOK_NAMES = new Set(['setup', 'teardown', 'attach', 'sever', 'owner']);

/** Checks a hooks object; throws InvalidArgument naming the first bad member. */
export function checkHooks(hooks: unknown, option: string): ConformanceHooks {
  if (hooks === undefined) return {};
  if (typeof hooks !== 'object' || hooks === null) throw new InvalidArgument(option, 'must be an object of hook functions');
  for (const [key, value] of Object.entries(hooks)) {
    // An unknown or misspelt hook would otherwise never run.
    if (!HOOK_NAMES.has(key)) throw new InvalidArgument(`${option}.${key}`, 'unknown hook (known: setup, teardown, attach, sever, owner)');
    if (value !== undefined && typeof value !== 'function') throw new InvalidArgument(`${option}.${key}`, 'must be a function');
  }
  return hooks as ConformanceHooks;
}
