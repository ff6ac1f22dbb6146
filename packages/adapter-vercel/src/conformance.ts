/**
 * `@sandstream/adapter-vercel/conformance`, the module's face for the
 * conformance kit: a default-export factory (a fresh sandbox per call) and
 * `conformanceHooks`, configured from the environment: real Vercel with
 * `VERCEL_TOKEN` + `VERCEL_TEAM_ID` + `VERCEL_PROJECT_ID` or
 * `VERCEL_OIDC_TOKEN`, else the emulator of this package, started by
 * `setup()`.
 */
import { severLinks } from '@sandstream/remote';
import { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { InvalidArgument, type Process, type Sandbox } from '@sandstream/types';
import { emulatorFetch } from './emulator/fetch.js';
import { createVercelSandbox, type VercelCredentials } from './index.js';
import type { ConformanceHooks } from '@sandstream/conformance';

/** Credentials from the environment: `VERCEL_TOKEN` + `VERCEL_TEAM_ID` + `VERCEL_PROJECT_ID`, or `VERCEL_OIDC_TOKEN`. */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): VercelCredentials | 'oidc' | undefined {
  const { VERCEL_TOKEN: token, VERCEL_TEAM_ID: teamId, VERCEL_PROJECT_ID: projectId } = env;
  if (token && teamId && projectId) return { token, teamId, projectId };
  if (env['VERCEL_OIDC_TOKEN']) return 'oidc';
  return undefined;
}

/** How a second OS process joins a run's sandbox (the `owner` hook, spec 1.4): JSON in this variable. */
const JOIN_VARIABLE = 'SANDSTREAM_VERCEL_JOIN';

/** What {@link JOIN_VARIABLE} holds: the sandbox's name, and the emulator's address and credentials when it runs on one. */
interface Join {
  readonly name: string;
  readonly emulator?: { readonly url: string; readonly credentials: VercelCredentials; readonly recordBase: string };
}

/** A handle on the sandbox {@link JOIN_VARIABLE} names, never its owner; undefined without it. */
async function joinedSandbox(): Promise<Sandbox<VercelSdkSandbox> | undefined> {
  const text = process.env[JOIN_VARIABLE];
  if (text === undefined || text === '') return undefined;
  const join = JSON.parse(text) as Join;
  if (join.emulator === undefined) {
    const credentials = credentialsFromEnv();
    return createVercelSandbox({ sandbox: await VercelSdkSandbox.get({ name: join.name, ...(credentials === 'oidc' ? {} : credentials) }) });
  }
  const { url, credentials, recordBase } = join.emulator;
  return createVercelSandbox({ sandbox: await VercelSdkSandbox.get({ name: join.name, ...credentials, fetch: emulatorFetch(url) }), recordBase });
}

/** The emulator the conformance hooks started, when no real credentials are set. */
let hookEmulator: { url: string; credentials: VercelCredentials; fetch: typeof globalThis.fetch; recordBase: string; close(): Promise<void> } | undefined;

/**
 * The conformance kit's entry point: a fresh sandbox per call, on real
 * Vercel with credentials from the environment, or on the emulator that
 * {@link conformanceHooks} started when there are none.
 */
export default async function createSandbox(): Promise<Sandbox<VercelSdkSandbox>> {
  const joined = await joinedSandbox();
  if (joined !== undefined) return joined;
  if (hookEmulator !== undefined) {
    return createVercelSandbox({ ...hookEmulator.credentials, fetch: hookEmulator.fetch, recordBase: hookEmulator.recordBase });
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

/**
 * The kit's hooks (`ConformanceHooks` of `@sandstream/conformance`), every one of which this module
 * gives: named by a type-only import, so nothing of the kit loads at run time.
 */
export type VercelConformanceHooks = Required<ConformanceHooks>;

/**
 * Conformance hooks: `setup` starts the local emulator when no real
 * credentials are set (so the default export runs against it), `teardown`
 * stops it, and `attach` gives a second handle on the same Vercel sandbox
 * whose `close()` leaves it running.
 */
export const conformanceHooks: VercelConformanceHooks = {
  async setup() {
    if (credentialsFromEnv() !== undefined || hookEmulator !== undefined || process.env[JOIN_VARIABLE]) return;
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
    return createVercelSandbox({ sandbox: native, ...(hookEmulator === undefined ? {} : { recordBase: hookEmulator.recordBase }) });
  },
  sever(process: Process) {
    return severLinks(process);
  },
  owner(sandbox) {
    const native = sandbox.native;
    if (!(native instanceof VercelSdkSandbox)) throw new InvalidArgument('sandbox', 'is not a sandbox of this adapter');
    const emulator = hookEmulator === undefined ? undefined : { url: hookEmulator.url, credentials: hookEmulator.credentials, recordBase: hookEmulator.recordBase };
    const join: Join = { name: native.name, ...(emulator === undefined ? {} : { emulator }) };
    return { env: { [JOIN_VARIABLE]: JSON.stringify(join) } };
  },
};

