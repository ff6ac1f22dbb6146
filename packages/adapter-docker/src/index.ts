/**
 * `@sandstream/adapter-docker`: Sandstream sandboxes over Docker
 * containers, through the Engine API's exec and the shared remote driver
 * (ADR-0033, ADR-0035).
 *
 * @packageDocumentation
 */
import type Docker from 'dockerode';
import { InvalidArgument, type CapabilityManifest, type Sandbox } from '@sandstream/types';
import { nonNegativeOption } from '@sandstream/types/runtime';
import { checkRemoteOptions, defineRemoteSandbox } from '@sandstream/remote';
import { addressOf, clientOf, describeEngineError, typedError } from './client.js';
import { createOwnedContainer, removeOwnedContainer } from './container.js';
import { ContainerGone, DockerUnreachable } from './errors.js';
import { checkDockerOptions, type DockerExistingContainerOptions, type DockerNewContainerOptions, type DockerSandboxOptions } from './options.js';
import { DockerTransport } from './transport.js';

/**
 * What the adapter does on Docker: output streamed as bytes, standard
 * input through the exec's hijacked connection (half-closed for
 * end-of-file), limits by `prlimit` in front of the command (the image
 * must have util-linux's), and accounts through exec's `User`.
 */
export const DOCKER_CAPABILITIES: CapabilityManifest = Object.freeze({
  streaming: true,
  stdin: true,
  'resource-limits': true,
  user: true,
  // Spec 1.2 (ADR-0036): records in the container, which another handle on it, in another OS
  // process too, lists and follows; the files keep every byte.
  attach: true,
  'attach-reconnect': true,
  'replay-full': true,
  // Spec 1.5 (ADR-0052): an exec with Tty, the supervisor in its terminal mode; a background
  // command's terminal is util-linux's script in the container (README, Terminals).
  pty: true,
});

/**
 * The manifest of a sandbox whose container runs under `runtime`: under gVisor (`runsc`) without
 * `pty`, since an exec there with `Tty` gives the supervisor's holder no job control on the
 * terminal (its start reports ENOTTY; README, Under gVisor).
 */
function capabilitiesUnder(runtime: string): CapabilityManifest {
  if (runtime !== 'runsc') return DOCKER_CAPABILITIES;
  const { pty: _terminals, ...withoutTerminals } = DOCKER_CAPABILITIES;
  return Object.freeze(withoutTerminals);
}

/** The container a sandbox runs in, ready (running), whether it is ours, and its OCI runtime. */
async function obtain(docker: Docker, options: DockerSandboxOptions): Promise<{ container: Docker.Container; owned: boolean; runtime: string }> {
  if (options.container === undefined) {
    const { image, network, command, runtime, create } = options as DockerNewContainerOptions;
    const container = await createOwnedContainer(docker, { image, network, command, runtime, create });
    // `create` is merged over the option; neither given, the daemon named its default at create
    // time, and one inspect reads it.
    let named = create?.HostConfig?.Runtime ?? runtime;
    if (named === undefined) {
      try {
        named = (await container.inspect()).HostConfig.Runtime ?? DEFAULT_RUNTIME;
      } catch (error) {
        await removeOwnedContainer(container).catch(() => undefined);
        throw typedError(docker, container.id, error) ?? error;
      }
    }
    return { container, owned: true, runtime: named };
  }
  const given = (options as DockerExistingContainerOptions).container;
  const named = typeof given === 'string' ? docker.getContainer(given) : given;
  let state;
  try {
    state = await named.inspect();
  } catch (error) {
    throw typedError(docker, named.id, error) ?? error;
  }
  if (!state.State.Running) throw new ContainerGone(state.Id, 'stopped');
  // The id, not the name: a name can be given to another container later.
  return { container: typeof given === 'string' ? docker.getContainer(state.Id) : given, owned: false, runtime: state.HostConfig.Runtime ?? DEFAULT_RUNTIME };
}

/** What the Engine reports for a container made without a runtime on a daemon that names none. */
const DEFAULT_RUNTIME = 'runc';

/** The runtime of each sandbox this module made, read once at its creation. */
const runtimes = new WeakMap<Sandbox, string>();

/**
 * The OCI runtime the sandbox's container runs under, as the Engine named it
 * when the sandbox was created (`HostConfig.Runtime` of the container's
 * inspect): `'runsc'` for gVisor, `'runc'` for Docker's default. For a
 * borrowed container it is how to learn whether the commands meet the host's
 * kernel or gVisor's; for an owned one, the `runtime` option or the daemon's
 * default. No request: it was read at creation.
 *
 * @throws InvalidArgument for a sandbox this adapter did not create.
 *
 * @example
 * ```ts
 * import { createDockerSandbox, runtimeOf } from '@sandstream/adapter-docker';
 * await using sb = await createDockerSandbox({ container: 'agent-box' });
 * if (runtimeOf(sb) !== 'runsc') throw new Error('agent-box must run under gVisor');
 * ```
 */
export function runtimeOf(sandbox: Sandbox<Docker.Container>): string {
  const runtime = runtimes.get(sandbox);
  if (runtime === undefined) throw new InvalidArgument('sandbox', 'was not created by createDockerSandbox');
  return runtime;
}

/**
 * Creates a Sandstream sandbox in a Docker container. Commands run as argv
 * (no shell) under the remote driver's supervisor, their output arrives as
 * bytes, the exit status is exact, and teardown reaches the whole process
 * tree: what plain `docker exec` cannot do (it has no kill, and an exec's
 * process outlives its client).
 *
 * Ownership decides what `close()` does: a container the caller passes
 * (`container`) is borrowed, and `close()` ends only the commands this
 * adapter started in it; one the adapter creates (`image`) is owned, made
 * with no network unless `network` names one, under the OCI runtime `runtime`
 * names (`'runsc'`: gVisor) or the daemon's default, and removed at `close()`.
 * {@link runtimeOf} says which runtime a sandbox's container runs under.
 *
 * @throws InvalidArgument for unknown or malformed options, before any request (`runtime` with a borrowed `container` too); for a `runtime` the daemon does not have.
 * @throws DockerUnreachable when no Engine answers at the address.
 * @throws ImageMissing when `image` is not on the daemon (the adapter never pulls).
 * @throws ContainerGone when a borrowed container does not exist or is not running.
 *
 * @example
 * ```ts
 * import { createDockerSandbox } from '@sandstream/adapter-docker';
 * await using sb = await createDockerSandbox({ image: 'debian:bookworm-slim' });
 * const result = await sb.run(['echo', 'hello']);
 * console.log(result.stdoutText); // "hello\n"
 * ```
 */
export async function createDockerSandbox(options: DockerSandboxOptions): Promise<Sandbox<Docker.Container>> {
  checkDockerOptions(options);
  checkRemoteOptions(options, DOCKER_CAPABILITIES);
  const requestTimeoutMs = nonNegativeOption('requestTimeoutMs', options.requestTimeoutMs, 15_000);
  const docker = clientOf(options.docker, options.socketPath);
  try {
    await docker.ping();
  } catch (error) {
    throw typedError(docker, '', error) ?? new DockerUnreachable(addressOf(docker), describeEngineError(error), { cause: error });
  }
  const { container, owned, runtime } = await obtain(docker, options);
  const sandbox = defineRemoteSandbox<Docker.Container>({
    name: 'docker',
    capabilities: capabilitiesUnder(runtime),
    native: container,
    options,
    transport: ({ shell }) => new DockerTransport({ docker, container: container.id, requestTimeoutMs, shell }),
    describe: describeEngineError,
    // Every signal on Docker is a helper (exec has no signal call), and every exec is three Engine
    // requests and a `runc exec`: one exec per account takes the helpers' words on its stdin.
    helperChannel: true,
    // The container goes only if it is ours.
    release: async () => {
      if (owned) await removeOwnedContainer(container);
    },
  });
  runtimes.set(sandbox, runtime);
  return sandbox;
}

export { ContainerGone, ContainerPaused, DockerRestarted, DockerUnreachable, ImageMissing } from './errors.js';
export { LABELS, sweepContainers } from './container.js';
export { DockerTransport, type DockerTransportSettings } from './transport.js';
export { execStatus } from './exit-status.js';
export { FrameSplitter, FrameError } from './demux.js';
export { DEFAULT_SOCKET } from './client.js';
export type { DockerCommonOptions, DockerExistingContainerOptions, DockerNewContainerOptions, DockerSandboxOptions } from './options.js';
