import { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { InvalidArgument, type CapabilityManifest, type Sandbox } from '@sandstream/types';
import { checkOptionKeys, nonNegativeOption } from '@sandstream/types/runtime';
import { checkRemoteOptions, DEFAULT_RETRY, defineRemoteSandbox, type RemoteSandboxOptions } from '@sandstream/remote';
import { VercelApi } from './api.js';
import { describeError, toSandstreamError } from './errors.js';
import { StdinWriter } from './stdin.js';
import { VercelTransport } from './transport.js';

/** Credentials of the Vercel API, all three together (as the SDK requires). */
export interface VercelCredentials {
  readonly token: string;
  readonly teamId: string;
  readonly projectId: string;
}

/**
 * Settings that apply whichever way the sandbox is obtained: the remote
 * kit's vocabulary that applies here (`graceMs`, `killWaitMs`, `env`,
 * `requestTimeoutMs`, `shellPath`, `envPath`, `recordBase`; the emulator
 * gives its `recordBase`, since its commands share the host's `/tmp`), and
 * the service's own.
 */
export interface VercelCommonOptions extends Pick<RemoteSandboxOptions, 'graceMs' | 'killWaitMs' | 'env' | 'requestTimeoutMs' | 'shellPath' | 'envPath' | 'recordBase'> {
  /**
   * Standard input: `'probe'` (default) asks the service once whether its
   * stdin endpoint answers and advertises `stdin` only then; `false` never
   * advertises it.
   */
  readonly stdin?: 'probe' | false;
  /**
   * Sent as every command's API `timeout`: a server-side backstop that ends
   * a command whose client went away. The runtime's own `timeout` option is
   * what bounds a command normally. Default: none (the sandbox's own
   * lifetime is the last backstop).
   */
  readonly commandTimeoutMs?: number;
  /**
   * Bound on the wait for a start's first record, the command's id, in ms
   * (default 60000): past it the start's outcome is unknown. The service
   * sends it once the process runs, which a busy sandbox delays.
   */
  readonly startTimeoutMs?: number;
}

/** Run commands in an existing SDK sandbox. The adapter does not own it: `close()` leaves it running. */
export interface VercelExistingOptions extends VercelCommonOptions {
  readonly sandbox: VercelSdkSandbox;
}

/**
 * Create a sandbox (owned by the adapter: `close()` stops it). Without
 * `token`, `teamId` and `projectId` the SDK reads `VERCEL_OIDC_TOKEN`.
 */
export interface VercelCreateOptions extends VercelCommonOptions, Partial<VercelCredentials> {
  /** The SDK's `fetch` option: the only way to route its requests elsewhere (the emulator's, say). */
  readonly fetch?: typeof globalThis.fetch;
  /** Further `Sandbox.create()` parameters (runtime, timeout, resources, ...). */
  readonly create?: Omit<NonNullable<Parameters<typeof VercelSdkSandbox.create>[0]>, 'token' | 'teamId' | 'projectId' | 'fetch'>;
}

export type VercelSandboxOptions = VercelExistingOptions | VercelCreateOptions;

/** The capabilities this adapter can have; `stdin` depends on the service. */
function manifest(stdin: boolean): CapabilityManifest {
  const capabilities = {
    streaming: true,
    stdin,
    'resource-limits': false,
    user: false,
    // The log stream is NDJSON text: output arrives decoded, invalid UTF-8
    // replaced as the WHATWG decoder does (ADR-0013, ADR-0027).
    'binary-output': false,
    // Spec 1.2 (ADR-0036): records in the sandbox, which a handle built from its id (the SDK's
    // Sandbox.get), in another OS process too, lists and follows; the files keep every byte.
    attach: true,
    'attach-reconnect': true,
    'replay-full': true,
  };
  return capabilities as CapabilityManifest;
}

/**
 * Whether the service offers standard input: one command that reads its
 * stdin, one empty write (the service answers the confirmed offset when it
 * has the endpoint), then end-of-file.
 */
async function probeStdin(api: VercelApi): Promise<boolean> {
  try {
    const answer = await api.once('/cmd', { command: 'cat', args: [], env: {}, sudo: false });
    const cmdId = (answer.json as { command?: { id?: string } } | undefined)?.command?.id;
    if (answer.status !== 200 || cmdId === undefined) return false;
    const writer = new StdinWriter(api, cmdId, new AbortController().signal, { ...DEFAULT_RETRY, attempts: 3 });
    const answered = await writer.write(new Uint8Array(0)).then(
      () => true,
      () => false,
    );
    await writer.close().catch(() => undefined);
    return answered;
  } catch {
    return false;
  }
}

const COMMON_KEYS = ['graceMs', 'killWaitMs', 'env', 'stdin', 'commandTimeoutMs', 'requestTimeoutMs', 'startTimeoutMs', 'shellPath', 'envPath', 'recordBase'];
const EXISTING_KEYS = new Set([...COMMON_KEYS, 'sandbox']);
const CREATE_KEYS = new Set([...COMMON_KEYS, 'sandbox', 'token', 'teamId', 'projectId', 'fetch', 'create']);

/**
 * Creates a Sandstream sandbox on Vercel Sandbox. Each command is one
 * attached start of the supervisor of `@sandstream/remote` (ADR-0033),
 * whose answer streams the command's output and its end; signals reach the
 * command's whole process tree, and `close()` sweeps what escaped it.
 *
 * @example
 * ```ts
 * import { createVercelSandbox } from '@sandstream/adapter-vercel';
 * await using sb = await createVercelSandbox({
 *   token: process.env.VERCEL_TOKEN!,
 *   teamId: process.env.VERCEL_TEAM_ID!,
 *   projectId: process.env.VERCEL_PROJECT_ID!,
 * });
 * const result = await sb.run(['echo', 'hello']);
 * console.log(result.stdoutText); // "hello\n"
 * ```
 */
export async function createVercelSandbox(options: VercelSandboxOptions = {}): Promise<Sandbox<VercelSdkSandbox>> {
  checkOptionKeys(options, (options as { sandbox?: unknown }).sandbox === undefined ? CREATE_KEYS : EXISTING_KEYS);
  checkRemoteOptions(options, manifest(true));
  const commandTimeoutMs = nonNegativeOption('commandTimeoutMs', options.commandTimeoutMs);
  const requestTimeoutMs = nonNegativeOption('requestTimeoutMs', options.requestTimeoutMs, 15_000);
  const startTimeoutMs = nonNegativeOption('startTimeoutMs', options.startTimeoutMs, 60_000);
  let native: VercelSdkSandbox;
  let owned: boolean;
  if ('sandbox' in options && options.sandbox !== undefined) {
    native = options.sandbox;
    owned = false;
  } else {
    const create = options as VercelCreateOptions;
    const credentials =
      create.token !== undefined || create.teamId !== undefined || create.projectId !== undefined
        ? { token: create.token, teamId: create.teamId, projectId: create.projectId }
        : {};
    try {
      native = await VercelSdkSandbox.create({
        ...(create.create ?? {}),
        ...credentials,
        ...(create.fetch === undefined ? {} : { fetch: create.fetch }),
      } as Parameters<typeof VercelSdkSandbox.create>[0]);
    } catch (error) {
      throw toSandstreamError(error, 'creating the sandbox');
    }
    owned = true;
  }
  const api = await VercelApi.of(native);
  const stdinService = options.stdin === false ? false : await probeStdin(api);
  // A log stream reopened, a stdin write resent: bounded by tries, not by time, since a stream
  // may break after it followed a command for minutes.
  const { attempts, baseMs, capMs, jitter } = DEFAULT_RETRY;
  const transport = new VercelTransport({ api, stdinService, commandTimeoutMs, requestTimeoutMs, startTimeoutMs, retry: { attempts, baseMs, capMs, jitter } });
  return defineRemoteSandbox<VercelSdkSandbox>({
    name: 'vercel',
    capabilities: manifest(stdinService),
    native,
    options,
    transport: () => transport,
    describe: describeError,
    // An outage of the API outlasts one request's bound: the kills and sweeps after a broken link
    // persist for 10 s at least.
    retryDeadlineMs: Math.max(requestTimeoutMs, 10_000),
    // The sandbox itself goes only if it is ours.
    release: async () => {
      if (!owned) return;
      try {
        await native.stop();
      } catch (error) {
        throw toSandstreamError(error, 'stopping the sandbox');
      }
    },
  });
}

export { VercelApi } from './api.js';
export { decodeStatus } from './status.js';
export { STDIN_CHUNK_BYTES } from './stdin.js';
export { VercelTransport, type VercelTransportSettings } from './transport.js';
export { toSandstreamError } from './errors.js';
