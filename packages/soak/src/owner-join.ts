/**
 * How an owner process of the `owner-killed` ending (a second OS process,
 * `owner-process.ts`) opens a sandbox on the same environment as the run's
 * shared sandbox, with the same settings: the local host, the emulator the
 * soak's emulator host serves (by its URL, as each adapter's conformance
 * module joins a run), the run's container on its Engine, or the run's
 * sshd as the same account with the same key and record base. A join is
 * plain JSON, sent to the owner process as it starts.
 */
import type { Sandbox } from '@sandstream/types';

/** Where the run's sandbox is, per target. */
export type OwnerPlace =
  /** `guarded: false` only in the runner's own tests: the local backend without its guardian, which leaks its trees. */
  | { readonly kind: 'local'; readonly guarded: boolean }
  | { readonly kind: 'e2b'; readonly url: string; readonly recordBase: string; readonly accounts: boolean }
  | {
      readonly kind: 'vercel';
      readonly url: string;
      readonly recordBase: string;
      readonly name: string;
      readonly credentials: { readonly token: string; readonly teamId: string; readonly projectId: string };
    }
  | { readonly kind: 'docker'; readonly socketPath: string; readonly container: string }
  | {
      readonly kind: 'ssh';
      readonly host: string;
      readonly port: number;
      readonly username: string;
      readonly privateKeyPath: string;
      readonly knownHostsPath: string;
      readonly recordBase: string;
    };

/** What an owner process needs to open its sandbox. */
export interface OwnerJoin {
  readonly place: OwnerPlace;
  /** The marker variable of every soak command and the run's id, its value. */
  readonly marker: { readonly name: string; readonly value: string };
  readonly graceMs: number;
  readonly killWaitMs: number;
}

/** Opens the owner's sandbox; each adapter is loaded only where it is the target's. */
export async function openOwnerSandbox(join: OwnerJoin): Promise<Sandbox> {
  const { place, graceMs, killWaitMs } = join;
  const env = { [join.marker.name]: join.marker.value };
  switch (place.kind) {
    case 'local': {
      const { createLocalSandbox, localBackend } = await import('@sandstream/adapter-local');
      const { defineSandbox, inheritedEnv } = await import('@sandstream/types/runtime');
      const options = { graceMs, env: { ...inheritedEnv(), ...env } };
      return place.guarded ? createLocalSandbox(options) : defineSandbox(localBackend(options, { ownerGuard: false }));
    }
    case 'e2b': {
      const { Sandbox: E2BSdkSandbox } = await import('e2b');
      const { createE2BSandbox } = await import('@sandstream/adapter-e2b');
      const sandbox = await E2BSdkSandbox.create({ debug: true, sandboxUrl: place.url });
      const accounts = place.accounts ? {} : { capabilities: { user: false } };
      return createE2BSandbox({ sandbox, owned: false, graceMs, killWaitMs, env, recordBase: place.recordBase, ...accounts });
    }
    case 'vercel': {
      const { Sandbox: VercelSdkSandbox } = await import('@vercel/sandbox');
      const { createVercelSandbox } = await import('@sandstream/adapter-vercel');
      const { emulatorFetch } = await import('@sandstream/adapter-vercel/emulator');
      const sandbox = await VercelSdkSandbox.get({ name: place.name, ...place.credentials, fetch: emulatorFetch(place.url) });
      return createVercelSandbox({ sandbox, recordBase: place.recordBase, graceMs, killWaitMs, env });
    }
    case 'docker': {
      const { createDockerSandbox } = await import('@sandstream/adapter-docker');
      return createDockerSandbox({ socketPath: place.socketPath, container: place.container, graceMs, killWaitMs, env });
    }
    case 'ssh': {
      const { createSshSandbox } = await import('@sandstream/adapter-ssh');
      const { host, port, username, privateKeyPath, knownHostsPath, recordBase } = place;
      return createSshSandbox({ host, port, username, privateKeyPath, knownHostsPath, recordBase, graceMs, killWaitMs, env });
    }
  }
}
