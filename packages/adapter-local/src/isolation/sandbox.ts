import type { CapabilityManifest, Sandbox } from '@sandstream/types';
import { defineSandbox } from '@sandstream/types/runtime';
import { resolveUser } from '../users.js';
import { IsolatedDriver } from './driver.js';
import type { Environment, IsolatedMount } from './environment.js';
import type { EnvironmentHandle } from './handle.js';
import type { IsolationSupport } from './probe.js';
import type { IsolatedTerminalTools } from './terminal.js';

/** What `sandbox.native.sandbox` tells about an isolated sandbox's environment. */
export interface IsolatedEnvironmentInfo {
  /** How the namespaces were made: directly as root, or in an unprivileged user namespace. */
  readonly via: 'root' | 'user-namespace';
  /** The private, writable work directory inside (also the default working directory). */
  readonly workDir: string;
  /** True when the sandbox shares the host's network; false: a network namespace with only loopback. */
  readonly network: boolean;
  /** Host paths bound into the sandbox. */
  readonly mounts: readonly IsolatedMount[];
  /** The host pid of the sandbox's init (pid 1 inside), once it runs; undefined before and after. */
  initPid(): number | undefined;
}

/** Everything an isolated sandbox's commands are created from. */
export interface IsolatedSettings {
  readonly name: string;
  readonly capabilities: CapabilityManifest;
  readonly native: object;
  readonly graceMs: number;
  readonly killWaitMs: number;
  /**
   * The bound stated as `termination.ownerLossMs`: an environment this
   * process made ends with it (its init sees the end of its pipe, runs the
   * termination sequence and ends, and the kernel ends the PID namespace
   * with whatever is left); the commands this process started in an
   * environment it joined are ended by its guardian (guardian.ts).
   * Undefined when neither can be promised.
   */
  readonly ownerLossMs: number | undefined;
  readonly support: IsolationSupport;
  readonly baseEnv: Readonly<Record<string, string>>;
  readonly defaultCwd: string;
  readonly prlimitPath: string | undefined;
  /** What commands on a terminal need; undefined where the sandbox declares no `pty`. */
  readonly terminalTools: IsolatedTerminalTools | undefined;
}

interface Registered {
  readonly environment: EnvironmentHandle;
  /** The environment was joined: this process's guardian ends its commands should it die. */
  readonly joined: boolean;
  readonly settings: IsolatedSettings;
  /** Held by every handle on the environment and every command's driver: its collection ends the environment. */
  readonly anchor: object;
}

/**
 * The safety net of an environment nobody can reach any more: no handle on
 * it and no command of it left, yet never closed. Its end is then the
 * right thing, and it is said out loud.
 */
const abandoned = new FinalizationRegistry<Environment>((environment) => {
  if (environment.gone !== undefined) return;
  process.emitWarning(
    "An isolated local sandbox was garbage-collected without close(); its environment is being destroyed. Use `await using` or call close().",
    { code: 'SANDSTREAM_SANDBOX_LEAKED' },
  );
  void environment.destroy();
});

/** Which environment each isolated sandbox (owner or attached) runs in. */
const environments = new WeakMap<Sandbox, Registered>();

/** Builds a handle on `registered`'s environment; `owner`, the environment that its close() destroys. */
function build<Native>(registered: Registered, owner: Environment | undefined): Sandbox<Native> {
  const { environment, settings, anchor } = registered;
  const sandbox = defineSandbox<Native>({
    name: settings.name,
    capabilities: settings.capabilities,
    native: settings.native as Native,
    graceMs: settings.graceMs,
    killWaitMs: settings.killWaitMs,
    ...(settings.ownerLossMs === undefined ? {} : { ownerLossMs: settings.ownerLossMs }),
    createDriver: (command) =>
      new IsolatedDriver(command, {
        anchor,
        environment,
        support: settings.support,
        baseEnv: settings.baseEnv,
        defaultCwd: settings.defaultCwd,
        prlimitPath: settings.prlimitPath,
        user: command.user === undefined ? undefined : resolveUser(command.user),
        ownerLossGraceMs: registered.joined && settings.ownerLossMs !== undefined ? settings.graceMs : undefined,
        terminalTools: settings.terminalTools,
      }),
    // The owner's close() ends the environment once its own commands are
    // wound down: the namespace's end is the last word. An attached handle
    // leaves the environment alone.
    ...(owner === undefined ? {} : { close: () => owner.destroy() }),
  });
  environments.set(sandbox, registered);
  return sandbox;
}

/** Creates an isolated sandbox that owns a new environment. */
export function createIsolatedSandbox<Native>(
  environment: Environment,
  settings: IsolatedSettings,
): Sandbox<Native> {
  const anchor = {};
  abandoned.register(anchor, environment);
  return build<Native>({ environment, settings, anchor, joined: false }, environment);
}

/**
 * Creates an isolated sandbox on an environment this process joined
 * (join.ts): never destroyed by this process, whose guardian ends the
 * sandbox's commands should it die first.
 */
export function createJoinedSandbox<Native>(environment: EnvironmentHandle, settings: IsolatedSettings): Sandbox<Native> {
  return build<Native>({ environment, settings, anchor: {}, joined: true }, undefined);
}

/**
 * A second handle on the environment an isolated sandbox runs in: its
 * commands run beside the owner's, and its `close()` ends only its own
 * commands. Once the owner's `close()` has ended the environment, every
 * command of this handle fails with `SpawnFailed`. (Another process joins
 * an environment by its init's pid instead: `createLocalSandbox`'s `join`
 * option.)
 *
 * @throws TypeError when `sandbox` is not an isolated local sandbox.
 */
export function attachIsolatedSandbox<Native>(sandbox: Sandbox<Native>): Sandbox<Native> {
  const registered = environments.get(sandbox as Sandbox);
  if (registered === undefined) throw new TypeError('not an isolated local sandbox');
  return build<Native>(registered, undefined);
}
