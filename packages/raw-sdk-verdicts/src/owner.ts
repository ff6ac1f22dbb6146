/**
 * The module the owner process of `owner.crash` loads (spec 1.4,
 * SS-OWNER-1): its default export makes a sandbox on the run's backend, as
 * {@link OWNER_VARIABLE} names it, the way that vendor's run makes one (the
 * raw wrapper or the adapter, with the same options). The kit starts a
 * command tree in the foreground through it, kills the process with
 * SIGKILL, and watches whether the tree is gone within the bound.
 */
import Docker from 'dockerode';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { emulatorFetch } from '@sandstream/adapter-vercel/emulator';
import { InvalidArgument, type Sandbox } from '@sandstream/types';
import { dockerHandle } from './docker-vendor.js';
import { e2bHandle } from './e2b-vendor.js';
import { OWNER_VARIABLE, type OwnerJoin } from './owner-join.js';
import { vercelHandle } from './vercel-vendor.js';

/** No hooks: the run that started this process set its backend up. */
export const conformanceHooks = {};

/** A sandbox on the case's backend, for the owner process. */
export default async function createOwnerSandbox(): Promise<Sandbox> {
  const text = process.env[OWNER_VARIABLE];
  if (text === undefined || text === '') throw new InvalidArgument(OWNER_VARIABLE, 'is not set: only the kit\'s owner process loads this module');
  const how = JSON.parse(text) as OwnerJoin;
  switch (how.vendor) {
    case 'e2b':
      return e2bHandle(how.side, await E2BSdkSandbox.create({ debug: true, sandboxUrl: how.url }), how.recordBase);
    case 'vercel':
      return vercelHandle(how.side, await VercelSdkSandbox.get({ name: how.name, ...how.credentials, fetch: emulatorFetch(how.url) }), how.recordBase);
    case 'docker': {
      const docker = new Docker({ socketPath: how.socketPath });
      return dockerHandle(how.side, docker, docker.getContainer(how.container));
    }
  }
}
