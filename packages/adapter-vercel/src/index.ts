import { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { InvalidArgument, type CapabilityManifest, type Sandbox } from '@sandstream/types';
import { defineSandbox, DEFAULT_GRACE_MS, DEFAULT_KILL_WAIT_MS } from '@sandstream/types/runtime';
import { VercelApi } from './api.js';
import { VercelDriver, type DriverContext } from './driver.js';
import { toSandstreamError } from './errors.js';
import { StdinWriter } from './stdin.js';

/** Credentials of the Vercel API, all three together (as the SDK requires). */
export interface VercelCredentials {
  readonly token: string;
  readonly teamId: string;
  readonly projectId: string;
}

/** What every way of creating the sandbox shares. */
export interface VercelCommonOptions {
  /** Time between SIGTERM and SIGKILL during teardown, in ms (default 2000). */
  readonly graceMs?: number;
  /** Wait for the end after SIGKILL before a `TransportError`, in ms (default 5000). */
  readonly killWaitMs?: number;
  /** Variables added to every command's environment, under its own `env`. */
  readonly env?: Readonly<Record<string, string>>;
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
  };
  return capabilities as CapabilityManifest;
}

/**
 * Whether the service offers standard input: one command that reads its
 * stdin, one empty write (the service answers the confirmed offset when it
 * has the endpoint), then end-of-file.
 */
async function probeStdin(api: VercelApi): Promise<boolean> {
  let cmdId: string | undefined;
  try {
    const answer = await api.start({ command: 'cat', args: [], env: {}, sudo: false });
    cmdId = (answer.json as { command?: { id?: string } } | undefined)?.command?.id;
    if (answer.status !== 200 || cmdId === undefined) return false;
    const writer = new StdinWriter(api, cmdId, new AbortController().signal);
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

function checkNumber(key: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgument(`options.${key}`, 'must be a non-negative finite number');
  }
  return value;
}

/**
 * Creates a Sandstream sandbox on Vercel Sandbox. Commands start detached
 * (the command id is known at once), their output comes from one log stream
 * per command, and teardown takes the command's whole process tree.
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
  if (typeof options !== 'object' || options === null) throw new InvalidArgument('options', 'must be an object');
  const graceMs = checkNumber('graceMs', options.graceMs) ?? DEFAULT_GRACE_MS;
  const killWaitMs = checkNumber('killWaitMs', options.killWaitMs) ?? DEFAULT_KILL_WAIT_MS;
  const commandTimeoutMs = checkNumber('commandTimeoutMs', options.commandTimeoutMs);
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
  const context: DriverContext = {
    api,
    stdinService,
    commandTimeoutMs,
    baseEnv: { ...(options.env ?? {}) },
  };
  return defineSandbox<VercelSdkSandbox>({
    name: 'vercel',
    capabilities: manifest(stdinService),
    native,
    graceMs,
    killWaitMs,
    createDriver: (command) => new VercelDriver(context, command),
    async close() {
      if (!owned) return;
      try {
        await native.stop();
      } catch (error) {
        throw toSandstreamError(error, 'stopping the sandbox');
      }
    },
  });
}

/** Credentials from the environment: `VERCEL_TOKEN` + `VERCEL_TEAM_ID` + `VERCEL_PROJECT_ID`, or `VERCEL_OIDC_TOKEN`. */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): VercelCredentials | 'oidc' | undefined {
  const { VERCEL_TOKEN: token, VERCEL_TEAM_ID: teamId, VERCEL_PROJECT_ID: projectId } = env;
  if (token && teamId && projectId) return { token, teamId, projectId };
  if (env['VERCEL_OIDC_TOKEN']) return 'oidc';
  return undefined;
}

/** The emulator the conformance hooks started, when no real credentials are set. */
let hookEmulator: { credentials: VercelCredentials; fetch: typeof globalThis.fetch; close(): Promise<void> } | undefined;

/**
 * The conformance kit's entry point: a fresh sandbox per call, on real
 * Vercel with credentials from the environment, or on the emulator that
 * {@link conformanceHooks} started when there are none.
 */
export default async function createSandbox(): Promise<Sandbox<VercelSdkSandbox>> {
  if (hookEmulator !== undefined) {
    return createVercelSandbox({ ...hookEmulator.credentials, fetch: hookEmulator.fetch });
  }
  const credentials = credentialsFromEnv();
  if (credentials === undefined) {
    throw new InvalidArgument(
      'environment',
      'no Vercel credentials: set VERCEL_TOKEN, VERCEL_TEAM_ID and VERCEL_PROJECT_ID, or VERCEL_OIDC_TOKEN (the conformance hooks start the local emulator instead)',
    );
  }
  return createVercelSandbox(credentials === 'oidc' ? {} : credentials);
}

/** The shape of the conformance kit's `ConformanceHooks` (spec 1.1). */
export interface VercelConformanceHooks {
  setup(): Promise<void>;
  teardown(): Promise<void>;
  attach(sandbox: Sandbox): Promise<Sandbox>;
}

/**
 * Conformance hooks: `setup` starts the local emulator when no real
 * credentials are set (so the default export runs against it), `teardown`
 * stops it, and `attach` gives a second handle on the same Vercel sandbox
 * whose `close()` leaves it running.
 */
export const conformanceHooks: VercelConformanceHooks = {
  async setup() {
    if (credentialsFromEnv() !== undefined || hookEmulator !== undefined) return;
    const { VercelEmulator } = await import('./emulator/index.js');
    hookEmulator = await VercelEmulator.start();
  },
  async teardown() {
    const emulator = hookEmulator;
    hookEmulator = undefined;
    await emulator?.close();
  },
  async attach(sandbox) {
    const native = sandbox.native;
    if (!(native instanceof VercelSdkSandbox)) {
      throw new InvalidArgument('sandbox', 'is not a sandbox of this adapter');
    }
    return createVercelSandbox({ sandbox: native });
  },
};

export { decodeStatus, VercelDriver, type DriverContext } from './driver.js';
export { LogPump, type LogPumpOptions, type LogSource } from './log-pump.js';
export { STDIN_CHUNK_BYTES } from './stdin.js';
export { TAG_VARIABLE } from './tree.js';
export { toSandstreamError } from './errors.js';
