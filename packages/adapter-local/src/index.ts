import { posix, resolve } from 'node:path';
import {
  InvalidArgument,
  type CapabilityManifest,
  type Sandbox,
} from '@sandstream/types';
import {
  capabilitiesOption,
  checkOptionKeys,
  defineSandbox,
  DEFAULT_GRACE_MS,
  DEFAULT_KILL_WAIT_MS,
  inheritedEnv,
  isPlainObject,
  nonNegativeOption,
  validateEnv,
  type SandboxBackend,
} from '@sandstream/types/runtime';
import { ChildDriver } from './child-driver.js';
import { processGuardian } from './guardian.js';
import { Environment, type IsolatedMount } from './isolation/environment.js';
import { probeIsolation } from './isolation/probe.js';
import { isolatedTerminalTools } from './isolation/terminal.js';
import { JoinedEnvironment } from './isolation/join.js';
import { createIsolatedSandbox, createJoinedSandbox, type IsolatedEnvironmentInfo } from './isolation/sandbox.js';
import { allowedHostEnv, validateHostEnv } from './host-env.js';
import { findPrlimit } from './limits.js';
import { findUtility } from './utilities.js';
import { validateMounts } from './mounts-option.js';
import { loadPtySupport, type LocalPtyModule } from './pty.js';
import { canSwitchUser, resolveUser } from './users.js';

/** Options of {@link createLocalSandbox}. */
export interface LocalSandboxOptions {
  /**
   * Working directory of commands that do not pass `cwd`, and the base a
   * relative per-call `cwd` resolves against (default: this process's).
   */
  readonly cwd?: string;
  /**
   * The base environment. Per-command `env` is merged over it, entry by
   * entry. Default: in the plain mode, this process's environment (or, with
   * {@link LocalSandboxOptions.hostEnv}, its allowlisted and named
   * variables); in the isolated mode, only its allowlisted variables
   * ({@link HOST_ENV_ALLOWLIST}: PATH, TERM, LANG, LANGUAGE, LC_*) and
   * those named in `hostEnv`, with HOME the work directory and TMPDIR /tmp.
   */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Names of this process's variables to pass into the sandbox's base
   * environment besides the allowlist (a name this process does not have is
   * left out). Over `env` when both are given. In the plain mode, giving it
   * (even `[]`) also narrows the default from every variable to the
   * allowlist.
   *
   * @example
   * ```ts
   * import { createLocalSandbox } from '@sandstream/adapter-local';
   * // The sandbox sees GITHUB_TOKEN, and of the rest of this process's environment only the allowlist.
   * await using sb = createLocalSandbox({ isolation: 'namespaces', hostEnv: ['GITHUB_TOKEN'] });
   * ```
   */
  readonly hostEnv?: readonly string[];
  /** Time between SIGTERM and SIGKILL during teardown, in ms (default 2000). */
  readonly graceMs?: number;
  /**
   * Turns capabilities off (never on: what the machine cannot do stays off).
   * Lets the conformance kit's negative cases run against this adapter.
   */
  readonly capabilities?: Partial<CapabilityManifest>;
  /**
   * `'none'` (the default): commands are child processes of this process,
   * with its user, filesystem, network and process table. Not a security
   * boundary. `'namespaces'`: the sandbox is one environment of Linux
   * namespaces (PID, mount, network, IPC, UTS) shared by its commands: the
   * host's root read-only, a private /tmp and work directory, its own
   * /proc, only loopback; `close()` ends it with everything in it. Throws
   * `IsolationUnavailable` when this machine cannot provide it.
   */
  readonly isolation?: 'none' | 'namespaces';
  /** `'namespaces'` only: share the host's network (default false: loopback only). */
  readonly network?: boolean;
  /**
   * `'namespaces'` only: host paths to bind into the sandbox, read-only
   * unless `readonly: false`. `target` (default: the same path) must exist
   * in the sandbox or lie under /tmp or the work directory.
   */
  readonly mounts?: readonly LocalMount[];
  /**
   * `'namespaces'` only: join the environment of an existing isolated
   * sandbox, of this process or another one of the same account, by its
   * init's host pid (`native.sandbox.initPid()` of that sandbox) instead of
   * making one; `network` and `mounts` are that environment's. The sandbox
   * runs its commands beside that environment's own, and its `close()` ends
   * only its own commands; once that environment has ended, every command
   * fails with `SpawnFailed`. Should this process die first, its commands
   * there get the termination sequence from its guardian, as in the plain
   * mode, while the environment lives on.
   */
  readonly join?: number;
  /**
   * The plain mode's terminal library (spec 1.5, capability `pty`; the
   * isolated mode makes its terminals inside the sandbox instead): a
   * module with the `open()` of `node-pty`, for a platform where the
   * prebuilt optional dependency `@lydell/node-pty` is not installed (musl,
   * 32-bit, BSD), typically `node-pty` built by the caller. Default: that
   * dependency, loaded when the sandbox is created. Without either, or
   * without util-linux's `setsid`, the sandbox declares no `pty` and
   * `native.ptyUnavailable` says why. Only `open()` and the terminal's
   * `resize()` are used; the command is started by this adapter (ADR-0053).
   *
   * @example
   * ```ts
   * import { createRequire } from 'node:module';
   * import { createLocalSandbox } from '@sandstream/adapter-local';
   * const require = createRequire(import.meta.url);
   * await using sb = createLocalSandbox({ ptyModule: require('node-pty') });
   * const result = await sb.run(['ls', '--color=auto'], { pty: { cols: 120, rows: 40 } });
   * ```
   */
  readonly ptyModule?: LocalPtyModule;
}

/** A host path bound into an isolated sandbox. */
export interface LocalMount {
  /** Absolute host path of a directory or file. */
  readonly source: string;
  /** Absolute path inside the sandbox (default: `source`). */
  readonly target?: string;
  /** Default true. */
  readonly readonly?: boolean;
}

/** What the local adapter exposes as `sandbox.native`. */
export interface LocalNative {
  readonly kind: 'local';
  /** The `prlimit` binary used for resource limits, if found. */
  readonly prlimitPath: string | undefined;
  /** The `setpriv` binary used to switch accounts with their groups, if found. */
  readonly setprivPath: string | undefined;
  /** The isolation mode, as {@link LocalSandboxOptions.isolation} chose it. */
  readonly isolation: 'none' | 'namespaces';
  /** The environment of a `'namespaces'` sandbox; undefined without isolation. */
  readonly sandbox: IsolatedEnvironmentInfo | undefined;
  /**
   * Why commands cannot run on a terminal here (capability `pty` absent):
   * the terminal library's loader's message or a missing `setsid` (plain
   * mode); no devpts of the sandbox's own, or a missing `script` or `stty`
   * (isolated mode); undefined where they can.
   */
  readonly ptyUnavailable: string | undefined;
}

/**
 * The second argument of {@link localBackend}: variants of the plain local
 * backend that no user of {@link createLocalSandbox} should want. They
 * exist for testing conformance kits, which must see a real adapter fail.
 */
export interface LocalBackendVariant {
  /**
   * `false` builds a backend without the guardian that ends a command's
   * process group when this process dies first (default `true`): such an
   * adapter leaks every running command on owner loss, and its sandbox
   * states no `termination.ownerLossMs`.
   */
  readonly ownerGuard?: boolean;
}

/** Beyond the grace period, what the guardian may take to end a dead owner's commands (spec 1.4, `ownerLossMs`). */
const OWNER_LOSS_LEEWAY_MS = 1_000;

/** The work directory of an isolated sandbox: a private tmpfs, the default working directory. */
export const ISOLATED_WORK_DIR = '/workspace';

/**
 * An isolated sandbox's default environment: this process's allowlisted
 * variables and those named, with HOME the work directory and TMPDIR /tmp
 * (the host's are not in the sandbox).
 */
function isolatedEnv(names: readonly string[]): Record<string, string> {
  const env = allowedHostEnv(names);
  env['HOME'] = ISOLATED_WORK_DIR;
  env['TMPDIR'] = '/tmp';
  return env;
}

/** The base environment: `env` or the mode's default, and over it the host's variables `hostEnv` names. */
function baseEnvironment(options: LocalSandboxOptions, isolated: boolean): Readonly<Record<string, string>> {
  const names = options.hostEnv === undefined ? undefined : validateHostEnv(options.hostEnv);
  if (options.env === undefined) {
    if (isolated) return isolatedEnv(names ?? []);
    return names === undefined ? inheritedEnv() : allowedHostEnv(names);
  }
  const env = validateEnv(options.env);
  if (names === undefined) return env;
  const named = inheritedEnv();
  return Object.freeze({ ...env, ...Object.fromEntries(names.filter((name) => Object.hasOwn(named, name)).map((name) => [name, named[name]!])) });
}

const OPTION_KEYS = new Set(['cwd', 'env', 'hostEnv', 'graceMs', 'capabilities', 'isolation', 'network', 'mounts', 'join', 'ptyModule']);

const VARIANT_KEYS = new Set(['ownerGuard']);

/**
 * Creates a sandbox that runs commands as local child processes: argv only,
 * never a shell; each command leads its own process group, and teardown
 * signals the whole group. With `isolation: 'namespaces'` the commands
 * share one environment of Linux namespaces that `close()` destroys.
 *
 * @throws IsolationUnavailable with `isolation: 'namespaces'` on a machine
 * that cannot create the namespaces (it names what is missing).
 *
 * @example
 * ```ts
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * await using sb = createLocalSandbox({ isolation: 'namespaces' });
 * const result = await sb.run(['echo', 'hello']);
 * console.log(result.stdoutText); // "hello\n"
 * ```
 */
export function createLocalSandbox(options: LocalSandboxOptions = {}): Sandbox<LocalNative> {
  const configured = configure(options);
  return 'backend' in configured ? defineSandbox(configured.backend) : configured.isolated();
}

/**
 * The backend that {@link createLocalSandbox} hands to `defineSandbox` when
 * `isolation` is `'none'`, with the same options and the same validation.
 * Wrap its `createDriver` to build a variant of the local adapter on the
 * shared runtime (the conformance kit's own tests build deliberately broken
 * adapters this way).
 *
 * `variant` exists for testing conformance kits: `{ ownerGuard: false }`
 * builds an adapter whose commands outlive this process when it dies.
 *
 * @throws InvalidArgument with `isolation: 'namespaces'`, whose sandbox is
 * not one backend per call.
 */
export function localBackend(options: LocalSandboxOptions = {}, variant: LocalBackendVariant = {}): SandboxBackend<LocalNative> {
  if (isPlainObject(options) && options.isolation === 'namespaces') {
    throw new InvalidArgument('options.isolation', "localBackend() builds only isolation: 'none'");
  }
  checkOptionKeys(variant, VARIANT_KEYS, 'variant');
  const ownerGuard: unknown = variant.ownerGuard ?? true;
  if (typeof ownerGuard !== 'boolean') throw new InvalidArgument('variant.ownerGuard', 'must be a boolean');
  const configured = configure(options, ownerGuard);
  if (!('backend' in configured)) {
    throw new InvalidArgument('options.isolation', "localBackend() builds only isolation: 'none'");
  }
  return configured.backend;
}

/** The environment whose init runs as `pid`, to join. */
function joinedEnvironment(pid: number): JoinedEnvironment {
  try {
    return new JoinedEnvironment(pid);
  } catch (error) {
    throw new InvalidArgument('options.join', (error as Error).message);
  }
}

type Configured =
  | { readonly backend: SandboxBackend<LocalNative> }
  | { readonly isolated: () => Sandbox<LocalNative> };

function configure(options: LocalSandboxOptions, ownerGuard = true): Configured {
  checkOptionKeys(options, OPTION_KEYS);
  const graceMs = nonNegativeOption('graceMs', options.graceMs, DEFAULT_GRACE_MS);
  const isolation: unknown = options.isolation ?? 'none';
  if (isolation !== 'none' && isolation !== 'namespaces') {
    throw new InvalidArgument('options.isolation', "must be 'none' or 'namespaces'");
  }
  if (isolation !== 'none' && options.ptyModule !== undefined) {
    throw new InvalidArgument('options.ptyModule', "applies only to isolation: 'none'");
  }
  if (isolation === 'none') {
    for (const key of ['network', 'mounts', 'join'] as const) {
      if (options[key] !== undefined) throw new InvalidArgument(`options.${key}`, "applies only to isolation: 'namespaces'");
    }
  }
  const join: unknown = options.join;
  if (join !== undefined) {
    if (typeof join !== 'number' || !Number.isSafeInteger(join) || join < 2) throw new InvalidArgument('options.join', 'must be a process id (an integer above 1)');
    for (const key of ['network', 'mounts'] as const) {
      if (options[key] !== undefined) throw new InvalidArgument(`options.${key}`, 'is the joined environment\'s: not an option with `join`');
    }
  }
  const network: unknown = options.network ?? false;
  if (typeof network !== 'boolean') throw new InvalidArgument('options.network', 'must be a boolean');
  const mounts = options.mounts === undefined ? [] : validateMounts(options.mounts);
  const cwd: unknown = options.cwd;
  if (cwd !== undefined && (typeof cwd !== 'string' || cwd === '' || cwd.includes('\0'))) {
    throw new InvalidArgument('options.cwd', 'must be a non-empty string without NUL');
  }
  // Checked before anything starts: never a silent fallback to no isolation.
  const probed = isolation === 'namespaces' ? probeIsolation() : undefined;
  const joined = join === undefined ? undefined : joinedEnvironment(join as number);
  // A joined environment was made the way it was made: its user namespace is entered if it has one.
  const support = probed === undefined || joined === undefined ? probed : { ...probed, via: joined.via };
  const prlimitPath = findPrlimit();
  const setprivPath = findUtility('setpriv');
  // Decided now, at creation, as the rest of the manifest is (SS-CAP-3); the plain mode's only.
  // The isolated mode's terminals are made inside the sandbox, in its own devpts (isolation/terminal.ts).
  const terminals = support === undefined ? terminalSupport(options.ptyModule) : isolatedTerminalTools(support);
  const available: CapabilityManifest = {
    streaming: true,
    stdin: true,
    'resource-limits': prlimitPath !== undefined,
    // Inside a user namespace only its root exists; host accounts are not mapped.
    user: canSwitchUser() && support?.via !== 'user-namespace',
    // Spec 1.2 (ADR-0036): background commands in this host process, the runtime's 4 MiB tail of each stream.
    attach: true,
    'replay-tail': true,
    // Spec 1.5 (ADR-0053): where the terminal library loads.
    ...('unavailable' in terminals ? {} : { pty: true }),
  };
  const capabilities = capabilitiesOption(options.capabilities, available);
  // The exit is reported once the group is empty and the pipes are drained;
  // a long grace period must not make that look like a lost command.
  const killWaitMs = Math.max(DEFAULT_KILL_WAIT_MS, Math.min(graceMs, 2 ** 31 - 1) + 1_000);

  if (support !== undefined) {
    // Inside, paths are the sandbox's: a relative cwd is taken from the work directory.
    const defaultCwd = posix.resolve(ISOLATED_WORK_DIR, (cwd as string | undefined) ?? '.');
    const baseEnv = baseEnvironment(options, true);
    const environment = joined ?? new Environment({ support, network, workDir: ISOLATED_WORK_DIR, mounts, graceMs });
    const info: IsolatedEnvironmentInfo = {
      via: support.via,
      workDir: ISOLATED_WORK_DIR,
      network: joined?.network ?? network,
      mounts: joined?.mounts ?? mounts,
      initPid: () => environment.initPid,
    };
    const settings = {
      name: 'local',
      capabilities,
      native: {
        kind: 'local',
        prlimitPath,
        setprivPath,
        isolation: 'namespaces',
        sandbox: Object.freeze(info),
        ptyUnavailable: 'unavailable' in terminals ? terminals.unavailable : undefined,
      } satisfies LocalNative,
      graceMs,
      killWaitMs,
      // A joined environment's commands are this process's guardian's to end, where it has one.
      ownerLossMs: joined === undefined || processGuardian() !== undefined ? graceMs + OWNER_LOSS_LEEWAY_MS : undefined,
      support,
      baseEnv,
      defaultCwd,
      prlimitPath,
      terminalTools: 'script' in terminals ? terminals : undefined,
    };
    return {
      isolated: () =>
        environment instanceof Environment
          ? createIsolatedSandbox<LocalNative>(environment, settings)
          : createJoinedSandbox<LocalNative>(environment, settings),
    };
  }

  // Fixed now, so a later chdir() of this process cannot move it.
  const defaultCwd = cwd === undefined ? undefined : resolve(cwd);
  const baseEnv = baseEnvironment(options, false);
  // Where no guardian can run (no sh, no procfs), no bound is promised.
  const guarded = ownerGuard && processGuardian() !== undefined;
  return {
    backend: {
      name: 'local',
      capabilities,
      native: {
        kind: 'local',
        prlimitPath,
        setprivPath,
        isolation: 'none',
        sandbox: undefined,
        ptyUnavailable: 'unavailable' in terminals ? terminals.unavailable : undefined,
      },
      graceMs,
      killWaitMs,
      ...(guarded ? { ownerLossMs: graceMs + OWNER_LOSS_LEEWAY_MS } : {}),
      createDriver: (command) =>
        new ChildDriver(command, {
          baseEnv,
          defaultCwd,
          prlimitPath,
          setprivPath,
          user: command.user === undefined ? undefined : resolveUser(command.user),
          ownerLossGraceMs: guarded ? graceMs : undefined,
          terminal: 'module' in terminals ? terminals : undefined,
        }),
    },
  };
}

/** The terminal library and `setsid`, or why commands cannot have a terminal. */
function terminalSupport(given: unknown): { readonly module: LocalPtyModule; readonly setsidPath: string } | { readonly unavailable: string } {
  const setsidPath = findUtility('setsid');
  if (setsidPath === undefined) return { unavailable: "util-linux's setsid was not found in the system directories" };
  const support = loadPtySupport(given);
  return 'unavailable' in support ? support : { module: support.module, setsidPath };
}

/** The conformance kit's entry point: a fresh local sandbox per call. */
export default async function createSandbox(): Promise<Sandbox> {
  return createLocalSandbox();
}

export type { ChildDriverOptions } from './child-driver.js';
export type { LocalPtyModule } from './pty.js';
export { HOST_ENV_ALLOWLIST } from './host-env.js';
export { IsolationUnavailable } from './isolation/probe.js';
export { attachIsolatedSandbox, type IsolatedEnvironmentInfo } from './isolation/sandbox.js';
export type { IsolatedMount } from './isolation/environment.js';
