import { resolve } from 'node:path';
import {
  InvalidArgument,
  type CapabilityManifest,
  type Sandbox,
} from '@sandstream/types';
import { defineSandbox, DEFAULT_GRACE_MS, DEFAULT_KILL_WAIT_MS } from '@sandstream/types/runtime';
import { ChildDriver } from './child-driver.js';
import { findPrlimit } from './limits.js';
import { findUtility } from './utilities.js';
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
   * entry. Default: this process's environment.
   */
  readonly env?: Readonly<Record<string, string>>;
  /** Time between SIGTERM and SIGKILL during teardown, in ms (default 2000). */
  readonly graceMs?: number;
  /**
   * Turns capabilities off (never on: what the machine cannot do stays off).
   * Lets the conformance kit's negative cases run against this adapter.
   */
  readonly capabilities?: Partial<CapabilityManifest>;
}

/** What the local adapter exposes as `sandbox.native`. */
export interface LocalNative {
  readonly kind: 'local';
  /** The `prlimit` binary used for resource limits, if found. */
  readonly prlimitPath: string | undefined;
  /** The `setpriv` binary used to switch accounts with their groups, if found. */
  readonly setprivPath: string | undefined;
}

/** Sets a variable as an own property, so that even `__proto__` is one. */
function defineVariable(env: Record<string, string>, name: string, value: string): void {
  Object.defineProperty(env, name, { value, enumerable: true, writable: true, configurable: true });
}

function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) defineVariable(env, name, value);
  return env;
}

const OPTION_KEYS = new Set(['cwd', 'env', 'graceMs', 'capabilities']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function validateBaseEnv(value: unknown): Record<string, string> {
  if (!isPlainObject(value)) throw new InvalidArgument('options.env', 'must be an object of strings');
  const env: Record<string, string> = {};
  for (const [name, entry] of Object.entries(value)) {
    const key = `options.env.${name}`;
    if (name === '' || name.includes('=') || name.includes('\0')) {
      throw new InvalidArgument(key, 'a variable name must be non-empty and contain neither "=" nor NUL');
    }
    if (typeof entry !== 'string') throw new InvalidArgument(key, 'must be a string');
    if (entry.includes('\0')) throw new InvalidArgument(key, 'must not contain a NUL character');
    defineVariable(env, name, entry);
  }
  return env;
}

function validateCapabilities(value: unknown, available: CapabilityManifest): CapabilityManifest {
  if (!isPlainObject(value)) throw new InvalidArgument('options.capabilities', 'must be an object of booleans');
  const capabilities = { ...available };
  for (const [name, enabled] of Object.entries(value)) {
    const key = `options.capabilities.${name}`;
    // Own keys only: `toString` and friends are not capabilities.
    if (!Object.hasOwn(available, name)) throw new InvalidArgument(key, 'unknown capability');
    if (enabled === undefined) continue;
    if (typeof enabled !== 'boolean') throw new InvalidArgument(key, 'must be a boolean');
    // Only ever off: what the machine cannot do stays off.
    if (!enabled) capabilities[name as keyof CapabilityManifest] = false;
  }
  return capabilities;
}

/**
 * Creates a sandbox that runs commands as local child processes: argv only,
 * never a shell; each command leads its own process group, and teardown
 * signals the whole group.
 *
 * @example
 * ```ts
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * await using sb = createLocalSandbox();
 * const result = await sb.run(['echo', 'hello']);
 * console.log(result.stdoutText); // "hello\n"
 * ```
 */
export function createLocalSandbox(options: LocalSandboxOptions = {}): Sandbox<LocalNative> {
  if (!isPlainObject(options)) throw new InvalidArgument('options', 'must be an object');
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw new InvalidArgument(`options.${key}`, 'unknown option');
  }
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  if (typeof graceMs !== 'number' || !Number.isFinite(graceMs) || graceMs < 0) {
    throw new InvalidArgument('options.graceMs', 'must be a non-negative finite number');
  }
  const cwd: unknown = options.cwd;
  if (cwd !== undefined && (typeof cwd !== 'string' || cwd === '' || cwd.includes('\0'))) {
    throw new InvalidArgument('options.cwd', 'must be a non-empty string without NUL');
  }
  // Fixed now, so a later chdir() of this process cannot move it.
  const defaultCwd = cwd === undefined ? undefined : resolve(cwd);
  const baseEnv = options.env === undefined ? inheritedEnv() : validateBaseEnv(options.env);
  const prlimitPath = findPrlimit();
  const setprivPath = findUtility('setpriv');
  const available: CapabilityManifest = {
    streaming: true,
    stdin: true,
    'resource-limits': prlimitPath !== undefined,
    user: canSwitchUser(),
  };
  const capabilities =
    options.capabilities === undefined ? available : validateCapabilities(options.capabilities, available);

  return defineSandbox<LocalNative>({
    name: 'local',
    capabilities,
    native: { kind: 'local', prlimitPath, setprivPath },
    graceMs,
    // The exit is reported once the group is empty and the pipes are drained;
    // a long grace period must not make that look like a lost command.
    killWaitMs: Math.max(DEFAULT_KILL_WAIT_MS, Math.min(graceMs, 2 ** 31 - 1) + 1_000),
    createDriver: (command) =>
      new ChildDriver(command, {
        baseEnv,
        defaultCwd,
        prlimitPath,
        setprivPath,
        user: command.user === undefined ? undefined : resolveUser(command.user),
      }),
  });
}

/** The conformance kit's entry point: a fresh local sandbox per call. */
export default async function createSandbox(): Promise<Sandbox> {
  return createLocalSandbox();
}

export type { ChildDriverOptions } from './child-driver.js';
