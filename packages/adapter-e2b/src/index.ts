import { Sandbox as E2BSdkSandbox, type SandboxOpts } from 'e2b';
import { InvalidArgument, type CapabilityManifest, type Sandbox } from '@sandstream/types';
import { defineSandbox, DEFAULT_GRACE_MS, DEFAULT_KILL_WAIT_MS } from '@sandstream/types/runtime';
import { createProcessClient, type EnvdEndpoint } from './connection.js';
import { E2BDriver, type E2BDriverSettings } from './driver.js';

/** envd's port inside every E2B sandbox. */
export const ENVD_PORT = 49983;

/** Settings that apply whichever way the sandbox is obtained. */
export interface E2BCommonOptions {
  /** Variables added to every command's environment (a command's own `env` wins). */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory of commands that pass no `cwd` (default: envd's, the user's home). */
  readonly cwd?: string;
  /** The sandbox account commands run as (default: envd's default user). */
  readonly user?: string;
  /** Time between SIGTERM and SIGKILL in teardown, in ms (default 2000). */
  readonly graceMs?: number;
  /** Wait for the tree to be gone after SIGKILL before reporting `TransportError`, in ms (default 5000). */
  readonly killWaitMs?: number;
  /** Keepalive interval envd is asked for on quiet streams, in whole seconds (default 5). */
  readonly keepaliveSeconds?: number;
  /** A stream silent for this long (no event, no keepalive) is broken, in ms (default 3 keepalives + 5 s). */
  readonly stallMs?: number;
  /** Bound on signal deliveries and other helper round trips, in ms (default 15000). */
  readonly requestTimeoutMs?: number;
  /** Path of `setsid` inside the sandbox (default `/usr/bin/setsid`). */
  readonly setsidPath?: string;
  /** Path of a POSIX shell inside the sandbox (default `/bin/sh`). */
  readonly shellPath?: string;
  /**
   * Turns capabilities off (never on), e.g. `user` where envd cannot switch
   * accounts (an emulator not running as root).
   */
  readonly capabilities?: Partial<CapabilityManifest>;
  /** A writable directory inside the sandbox for each command's FIFOs (default `/tmp`). */
  readonly tmpDir?: string;
  /** util-linux's `prlimit` inside the sandbox, for resource limits (default `/usr/bin/prlimit`). */
  readonly prlimitPath?: string;
  /**
   * After the command's leader ended, how long the relay may take to report
   * the tree gone before the runtime is told something outlived the leader
   * and winds it down, in ms (default 200).
   */
  readonly settleMs?: number;
}

/** A sandbox the caller already has. */
export interface E2BExistingSandboxOptions extends E2BCommonOptions {
  readonly sandbox: E2BSdkSandbox;
  /**
   * Whether `close()` kills the sandbox (default false: the caller owns it,
   * and `close()` ends only the commands this adapter started).
   */
  readonly owned?: boolean;
}

/** A sandbox the adapter creates, and kills on `close()`. */
export interface E2BNewSandboxOptions extends E2BCommonOptions {
  readonly sandbox?: undefined;
  /** The template to create it from (default: the SDK's). */
  readonly template?: string;
  /** The SDK's options: `apiKey`, `domain`, `timeoutMs` (the sandbox's life), `debug`, `sandboxUrl`... */
  readonly connection?: SandboxOpts;
}

export type E2BSandboxOptions = E2BExistingSandboxOptions | E2BNewSandboxOptions;

/** The capabilities this adapter advertises. */
export const E2B_CAPABILITIES: CapabilityManifest = Object.freeze({
  streaming: true,
  stdin: true,
  // prlimit in the launcher.
  'resource-limits': true,
  // envd runs a request as the account its Basic auth names.
  user: true,
});

const COMMON_KEYS = [
  'env',
  'cwd',
  'user',
  'graceMs',
  'killWaitMs',
  'keepaliveSeconds',
  'stallMs',
  'requestTimeoutMs',
  'setsidPath',
  'shellPath',
  'tmpDir',
  'prlimitPath',
  'settleMs',
  'capabilities',
];
const EXISTING_KEYS = new Set([...COMMON_KEYS, 'sandbox', 'owned']);
const NEW_KEYS = new Set([...COMMON_KEYS, 'sandbox', 'template', 'connection']);

function positive(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgument(`options.${name}`, 'must be a non-negative finite number');
  }
  return value;
}

/**
 * How the adapter reaches envd through the SDK's sandbox: the URL and
 * headers the SDK itself uses for its process RPCs (the pinned e2b
 * version keeps them on the instance).
 */
export function envdEndpointOf(sandbox: E2BSdkSandbox, user?: string): EnvdEndpoint {
  const internals = sandbox as unknown as {
    envdApiUrl?: string;
    envdAccessToken?: string;
  };
  if (typeof internals.envdApiUrl !== 'string') {
    throw new InvalidArgument('options.sandbox', 'is not an e2b Sandbox of the pinned version (no envd URL)');
  }
  const headers: Record<string, string> = {
    'E2b-Sandbox-Id': sandbox.sandboxId,
    'E2b-Sandbox-Port': String(ENVD_PORT),
  };
  if (internals.envdAccessToken !== undefined) headers['X-Access-Token'] = internals.envdAccessToken;
  return { url: internals.envdApiUrl, headers, ...(user === undefined ? {} : { user }) };
}

/**
 * Creates a Sandstream sandbox over an E2B sandbox. Commands run as argv
 * (no shell), their output arrives as bytes, the start event's pid is the
 * Process's `commandId`, and teardown reaches the whole process tree.
 *
 * Who owns the E2B sandbox decides what `close()` does: one the adapter
 * created (or one passed with `owned: true`) is killed; one the caller
 * passed keeps running, and `close()` ends only the commands this adapter
 * started in it.
 *
 * @example
 * ```ts
 * import { createE2BSandbox } from '@sandstream/adapter-e2b';
 * await using sb = await createE2BSandbox({ connection: { apiKey: process.env['E2B_API_KEY'] } });
 * const result = await sb.run(['echo', 'hello']);
 * console.log(result.stdoutText); // "hello\n"
 * ```
 */
export async function createE2BSandbox(options: E2BSandboxOptions = {}): Promise<Sandbox<E2BSdkSandbox>> {
  if (typeof options !== 'object' || options === null) throw new InvalidArgument('options', 'must be an object');
  const allowed = options.sandbox === undefined ? NEW_KEYS : EXISTING_KEYS;
  for (const key of Object.keys(options)) {
    if (!allowed.has(key)) throw new InvalidArgument(`options.${key}`, 'unknown option');
  }
  const graceMs = positive('graceMs', options.graceMs, DEFAULT_GRACE_MS);
  const killWaitMs = positive('killWaitMs', options.killWaitMs, DEFAULT_KILL_WAIT_MS);
  const keepaliveSeconds = Math.max(1, Math.ceil(positive('keepaliveSeconds', options.keepaliveSeconds, 5)));
  const stallMs = positive('stallMs', options.stallMs, keepaliveSeconds * 3_000 + 5_000);
  const requestTimeoutMs = positive('requestTimeoutMs', options.requestTimeoutMs, 15_000);

  let sdkSandbox: E2BSdkSandbox;
  let owned: boolean;
  if (options.sandbox !== undefined) {
    sdkSandbox = options.sandbox;
    owned = (options as E2BExistingSandboxOptions).owned ?? false;
  } else {
    const { template, connection } = options as E2BNewSandboxOptions;
    sdkSandbox = template === undefined ? await E2BSdkSandbox.create(connection) : await E2BSdkSandbox.create(template, connection);
    owned = true;
  }

  const settings: E2BDriverSettings = {
    client: createProcessClient(envdEndpointOf(sdkSandbox, options.user)),
    env: { ...options.env },
    cwd: options.cwd,
    setsidPath: options.setsidPath ?? '/usr/bin/setsid',
    shellPath: options.shellPath ?? '/bin/sh',
    keepaliveSeconds,
    stallMs,
    requestTimeoutMs,
    tmpDir: options.tmpDir ?? '/tmp',
    prlimitPath: options.prlimitPath ?? '/usr/bin/prlimit',
    settleMs: positive('settleMs', options.settleMs, 200),
  };

  const capabilities: CapabilityManifest = { ...E2B_CAPABILITIES };
  if (options.capabilities !== undefined) {
    if (typeof options.capabilities !== 'object' || options.capabilities === null) {
      throw new InvalidArgument('options.capabilities', 'must be an object of booleans');
    }
    for (const [name, enabled] of Object.entries(options.capabilities)) {
      if (!Object.hasOwn(E2B_CAPABILITIES, name)) throw new InvalidArgument(`options.capabilities.${name}`, 'unknown capability');
      if (enabled === undefined) continue;
      if (typeof enabled !== 'boolean') throw new InvalidArgument(`options.capabilities.${name}`, 'must be a boolean');
      if (!enabled) capabilities[name as keyof CapabilityManifest] = false;
    }
  }

  return defineSandbox<E2BSdkSandbox>({
    name: 'e2b',
    capabilities,
    native: sdkSandbox,
    graceMs,
    killWaitMs,
    createDriver: (command) => new E2BDriver(command, settings),
    async close() {
      // Every command this adapter started is gone by now (the runtime
      // disposed them); the sandbox itself goes only if it is ours.
      if (owned) await sdkSandbox.kill();
    },
  });
}

export { createProcessClient, type EnvdEndpoint, type ProcessClient } from './connection.js';
export type { E2BDriverSettings } from './driver.js';
export { E2BDriver } from './driver.js';
export { conformanceHooks, default } from './kit.js';
