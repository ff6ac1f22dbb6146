import { Sandbox as E2BSdkSandbox, type SandboxOpts } from 'e2b';
import { InvalidArgument, type CapabilityManifest, type Sandbox } from '@sandstream/types';
import { checkOptionKeys, nonNegativeOption } from '@sandstream/types/runtime';
import { checkRemoteOptions, defineRemoteSandbox, REMOTE_OPTION_KEYS, type RemoteSandboxOptions } from '@sandstream/remote';
import { createProcessClient, describeEnvdError, type EnvdEndpoint } from './connection.js';
import { EnvdTransport } from './transport.js';

/** envd's port inside every E2B sandbox. */
export const ENVD_PORT = 49983;

/**
 * Settings that apply whichever way the sandbox is obtained: the remote
 * kit's vocabulary (`env`, `cwd`, `user` (default: envd's default user),
 * `graceMs`, `killWaitMs`, `requestTimeoutMs`, `shellPath`, `envPath`,
 * `prlimitPath`, `capabilities`, `recordBase`; the envd emulator gives its
 * `recordBase`, since its commands share the host's `/tmp`), and envd's
 * stream keepalive.
 */
export interface E2BCommonOptions extends RemoteSandboxOptions {
  /** Keepalive interval envd is asked for on quiet streams, in whole seconds (default 5). */
  readonly keepaliveSeconds?: number;
  /** A stream silent for this long (no event, no keepalive) is broken, in ms (default 3 keepalives + 5 s). */
  readonly stallMs?: number;
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
  // Spec 1.5 (ADR-0052): envd's terminal (Start with pty, Update), the supervisor in its terminal
  // mode; a background command's terminal is util-linux's script in the sandbox (README, Terminals).
  pty: true,
});

const COMMON_KEYS = [...REMOTE_OPTION_KEYS, 'keepaliveSeconds', 'stallMs'];
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
  checkRemoteOptions(options, E2B_CAPABILITIES);
  const keepaliveSeconds = Math.max(1, Math.ceil(nonNegativeOption('keepaliveSeconds', options.keepaliveSeconds, 5)));
  const stallMs = nonNegativeOption('stallMs', options.stallMs, keepaliveSeconds * 3_000 + 5_000);

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

  return defineRemoteSandbox<E2BSdkSandbox>({
    name: 'e2b',
    capabilities: E2B_CAPABILITIES,
    native: sdkSandbox,
    options,
    transport: ({ requestTimeoutMs }) =>
      new EnvdTransport({ client: createProcessClient(envdEndpointOf(sdkSandbox, options.user)), keepaliveSeconds, stallMs, requestTimeoutMs }),
    describe: describeEnvdError,
    // The sandbox itself goes only if it is ours.
    release: async () => {
      if (owned) await sdkSandbox.kill();
    },
  });
}

export { createProcessClient, type EnvdEndpoint, type ProcessClient } from './connection.js';
export { EnvdTransport, STDIN_CHUNK, type EnvdTransportSettings } from './transport.js';
