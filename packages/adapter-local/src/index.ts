import {
  InvalidArgument,
  type CapabilityManifest,
  type Sandbox,
} from '@sandstream/types';
import { defineSandbox, DEFAULT_GRACE_MS } from '@sandstream/types/runtime';
import { ChildDriver } from './child-driver.js';
import { findPrlimit } from './limits.js';
import { canSwitchUser, resolveUser } from './users.js';

/** Options of {@link createLocalSandbox}. */
export interface LocalSandboxOptions {
  /** Working directory of commands that do not pass `cwd` (default: this process's). */
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
}

function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
  return env;
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
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  if (!Number.isFinite(graceMs) || graceMs < 0) {
    throw new InvalidArgument('options.graceMs', 'must be a non-negative finite number');
  }
  const prlimitPath = findPrlimit();
  const available: CapabilityManifest = {
    streaming: true,
    stdin: true,
    'resource-limits': prlimitPath !== undefined,
    user: canSwitchUser(),
  };
  const capabilities = { ...available };
  for (const [name, enabled] of Object.entries(options.capabilities ?? {})) {
    if (!(name in available)) throw new InvalidArgument(`options.capabilities.${name}`, 'unknown capability');
    if (enabled === false) capabilities[name as keyof CapabilityManifest] = false;
  }
  const baseEnv = options.env === undefined ? inheritedEnv() : { ...options.env };

  return defineSandbox<LocalNative>({
    name: 'local',
    capabilities,
    native: { kind: 'local', prlimitPath },
    graceMs,
    createDriver: (command) =>
      new ChildDriver(command, {
        baseEnv,
        defaultCwd: options.cwd,
        graceMs,
        prlimitPath,
        user: command.user === undefined ? undefined : resolveUser(command.user),
      }),
  });
}

/** The conformance kit's entry point: a fresh local sandbox per call. */
export default async function createSandbox(): Promise<Sandbox> {
  return createLocalSandbox();
}

export type { ChildDriverOptions } from './child-driver.js';
