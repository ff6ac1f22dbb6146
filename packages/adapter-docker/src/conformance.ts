/**
 * The adapter module's face for the conformance kit: a default-export
 * factory and `conformanceHooks`, configured from the environment.
 *
 * - The Engine: `DOCKER_HOST`, else the default socket.
 * - `SANDSTREAM_DOCKER_CONTAINER` set: that running container, borrowed for
 *   the whole run (never removed).
 * - else `SANDSTREAM_DOCKER_IMAGE` set: `setup()` creates one container
 *   from that image (owned by this module, no network) and `teardown()`
 *   removes it; `SANDSTREAM_DOCKER_RUNTIME` set: under that OCI runtime
 *   (`runsc` for gVisor), else the daemon's default.
 *
 * Every factory call is a handle that borrows the run's container, so the
 * kit's observer (`attach`) sees what a closed handle left.
 */
import { severLinks } from '@sandstream/remote';
import type { ConformanceHooks } from '@sandstream/conformance';
import { InvalidArgument, type Process, type Sandbox } from '@sandstream/types';
import type Docker from 'dockerode';
import { createDockerSandbox } from './index.js';
import { addressOf, clientOf } from './client.js';
import { createOwnedContainer, removeOwnedContainer } from './container.js';

/**
 * The kit's hooks (`ConformanceHooks` of `@sandstream/conformance`), every one of which this module
 * exports. A type-only import: the module needs the kit at no time but when the kit loads it.
 */
export type DockerConformanceHooks = Required<ConformanceHooks>;

interface Shared {
  docker: Docker;
  container: Docker.Container;
  owned: boolean;
}

let shared: Shared | undefined;

async function connect(): Promise<Shared> {
  const docker = clientOf(undefined, undefined);
  const borrowed = process.env['SANDSTREAM_DOCKER_CONTAINER'];
  if (borrowed !== undefined && borrowed !== '') return { docker, container: docker.getContainer(borrowed), owned: false };
  const image = process.env['SANDSTREAM_DOCKER_IMAGE'];
  if (image === undefined || image === '') {
    throw new InvalidArgument('SANDSTREAM_DOCKER_IMAGE', 'is not set: name an image on the Engine to create the run\'s container from (or SANDSTREAM_DOCKER_CONTAINER, a running container to borrow)');
  }
  const runtime = process.env['SANDSTREAM_DOCKER_RUNTIME'] || undefined;
  return { docker, container: await createOwnedContainer(docker, { image, network: undefined, command: undefined, runtime, create: undefined }), owned: true };
}

/** Lifecycle and observation hooks of this adapter module for the conformance kit. */
export const conformanceHooks: DockerConformanceHooks = {
  async setup() {
    shared ??= await connect();
  },
  async teardown() {
    const current = shared;
    shared = undefined;
    if (current?.owned === true) await removeOwnedContainer(current.container);
  },
  async attach(sandbox: Sandbox) {
    // A second handle on the same container; its close() never removes it.
    return createDockerSandbox({ docker: shared?.docker ?? clientOf(undefined, undefined), container: sandbox.native as Docker.Container });
  },
  sever(process: Process) {
    return severLinks(process);
  },
  owner(sandbox: Sandbox) {
    const address = addressOf(shared?.docker ?? clientOf(undefined, undefined));
    return {
      env: {
        SANDSTREAM_DOCKER_CONTAINER: (sandbox.native as Docker.Container).id,
        ...(address.startsWith('unix://') || address.startsWith('http') ? { DOCKER_HOST: address.replace(/^https?:/, 'tcp:') } : {}),
      },
    };
  },
};

/** The conformance kit's entry point: a handle on the run's container per call (see the module comment). */
export default async function createSandbox(): Promise<Sandbox<Docker.Container>> {
  if (shared === undefined) {
    throw new InvalidArgument('conformanceHooks', 'setup() has not run: the kit calls it before the first case (it creates the run\'s container from SANDSTREAM_DOCKER_IMAGE, or borrows SANDSTREAM_DOCKER_CONTAINER)');
  }
  return createDockerSandbox({ docker: shared.docker, container: shared.container });
}
