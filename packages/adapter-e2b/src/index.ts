import { Sandbox as E2BSdkSandbox, type SandboxOpts } from 'e2b';
import { InvalidArgument, type CapabilityManifest, type Sandbox } from '@sandstream/types';
import { capabilitiesOption, checkOptionKeys, defineSandbox, DEFAULT_GRACE_MS, DEFAULT_KILL_WAIT_MS, nonNegativeOption } from '@sandstream/types/runtime';
import { DEFAULT_PATHS, DEFAULT_RETRY, RemoteCommands, recordBaseOption } from '@sandstream/remote';
import { createProcessClient, describeEnvdError, type EnvdEndpoint } from './connection.js';
import { EnvdTransport } from './transport.js';

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
  /** Path of a POSIX shell inside the sandbox, which runs the supervisor and its helpers (default `/bin/sh`). */
  readonly shellPath?: string;
  /** Path of `env(1)` inside the sandbox, which sets the command's variables exactly (default `/usr/bin/env`). */
  readonly envPath?: string;
  /**
   * Turns capabilities off (never on), e.g. `user` where envd cannot switch
   * accounts (an emulator not running as root).
   */
  readonly capabilities?: Partial<CapabilityManifest>;
  /** util-linux's `prlimit` inside the sandbox, for resource limits (default `/usr/bin/prlimit`). */
  readonly prlimitPath?: string;
  /**
   * Where background commands' records are made in the sandbox, `${recordBase}${commandId}`
   * (default `/tmp/.sandstream-`). Every handle on one sandbox must use the same: a handle lists
   * and attaches only the records under its own base. The envd emulator gives its `recordBase`,
   * since its commands share the host's `/tmp`.
   */
  readonly recordBase?: string;
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
  // prlimit in front of the command, inside the supervisor.
  'resource-limits': true,
  // envd runs a request as the account its Basic auth names.
  user: true,
  // Spec 1.2 (ADR-0036): records in the sandbox, which a handle built from its id (the SDK's
  // Sandbox.connect), in another OS process too, lists and follows; the files keep every byte.
  attach: true,
  'attach-reconnect': true,
  'replay-full': true,
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
  'shellPath',
  'envPath',
  'prlimitPath',
  'capabilities',
  'recordBase',
];
const EXISTING_KEYS = new Set([...COMMON_KEYS, 'sandbox', 'owned']);
const NEW_KEYS = new Set([...COMMON_KEYS, 'sandbox', 'template', 'connection']);

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
  checkOptionKeys(options, (options as { sandbox?: unknown }).sandbox === undefined ? NEW_KEYS : EXISTING_KEYS);
  const graceMs = nonNegativeOption('graceMs', options.graceMs, DEFAULT_GRACE_MS);
  const killWaitMs = nonNegativeOption('killWaitMs', options.killWaitMs, DEFAULT_KILL_WAIT_MS);
  const keepaliveSeconds = Math.max(1, Math.ceil(nonNegativeOption('keepaliveSeconds', options.keepaliveSeconds, 5)));
  const stallMs = nonNegativeOption('stallMs', options.stallMs, keepaliveSeconds * 3_000 + 5_000);
  const requestTimeoutMs = nonNegativeOption('requestTimeoutMs', options.requestTimeoutMs, 15_000);
  const capabilities = capabilitiesOption(options.capabilities, E2B_CAPABILITIES);
  const recordBase = recordBaseOption(options.recordBase);

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

  const transport = new EnvdTransport({
    client: createProcessClient(envdEndpointOf(sdkSandbox, options.user)),
    keepaliveSeconds,
    stallMs,
    requestTimeoutMs,
  });
  const commands = new RemoteCommands({
    transport,
    env: { ...options.env },
    cwd: options.cwd,
    paths: {
      shell: options.shellPath ?? DEFAULT_PATHS.shell,
      env: options.envPath ?? DEFAULT_PATHS.env,
      prlimit: options.prlimitPath ?? DEFAULT_PATHS.prlimit,
    },
    requestTimeoutMs,
    // The kills and sweeps that follow a broken link: the link that just failed may fail once
    // more, and nothing else will end the command.
    retry: { ...DEFAULT_RETRY, attempts: 50, deadlineMs: requestTimeoutMs },
    describe: describeEnvdError,
    recordBase,
  }, { graceMs });

  return defineSandbox<E2BSdkSandbox>({
    name: 'e2b',
    capabilities,
    native: sdkSandbox,
    graceMs,
    killWaitMs,
    // Spec 1.4: the owner lease ends a foreground command's tree within this bound once its owner is lost.
    ownerLossMs: commands.ownerLossMs,
    createDriver: (command) => commands.createDriver(command),
    background: commands.background,
    async close() {
      // Every command this handle started has been disposed (its tree is gone); what left its
      // session is found by the tag. The sandbox itself goes only if it is ours.
      // A second chance, not a step teardown depends on: bounded well inside the kill wait.
      await commands.sweep(Math.min(killWaitMs, 5_000)).catch(() => undefined);
      if (owned) await sdkSandbox.kill();
    },
  });
}

export { createProcessClient, type EnvdEndpoint, type ProcessClient } from './connection.js';
export { EnvdTransport, STDIN_CHUNK, type EnvdTransportSettings } from './transport.js';
