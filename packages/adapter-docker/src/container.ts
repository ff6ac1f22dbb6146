/**
 * Containers the adapter owns: created from the caller's image with no
 * network unless asked for, an init that reaps the supervisors' zombies,
 * and labels that say who made them, so {@link sweepContainers} can find
 * what a host that crashed left behind. Removed (with force) at close.
 */
import { hostname } from 'node:os';
import type Docker from 'dockerode';
import { InvalidArgument } from '@sandstream/types';
import { engineMessage, statusOf, typedError } from './client.js';
import { ImageMissing } from './errors.js';

/** The labels of an owned container. */
export const LABELS = Object.freeze({
  /** `true` on every container the adapter created. */
  owned: 'dev.sandstream.owned',
  /** The host name of the process that created it. */
  host: 'dev.sandstream.host',
  /** That process's pid. */
  pid: 'dev.sandstream.pid',
  /** When it was created, ISO 8601. */
  created: 'dev.sandstream.created',
});

/** How an owned container is made. */
export interface OwnedContainerOptions {
  readonly image: string;
  /** A network to attach (`bridge`, a user-defined one); default none. */
  readonly network: string | undefined;
  /** The container's main process (default `sleep 2147483647`, under Docker's init). */
  readonly command: readonly string[] | undefined;
  /** The OCI runtime (`HostConfig.Runtime`, e.g. `runsc`); default the daemon's. */
  readonly runtime?: string | undefined;
  /** Fields of the Engine's create request merged over the adapter's (binds, memory limits, a user...). */
  readonly create: Docker.ContainerCreateOptions | undefined;
}

/** Creates and starts an owned container; rejects with `ImageMissing` when the image is not on the daemon. */
export async function createOwnedContainer(docker: Docker, options: OwnedContainerOptions): Promise<Docker.Container> {
  const extra = options.create ?? {};
  const request: Docker.ContainerCreateOptions = {
    ...extra,
    Image: options.image,
    Cmd: options.command === undefined ? ['sleep', '2147483647'] : [...options.command],
    Labels: {
      ...extra.Labels,
      [LABELS.owned]: 'true',
      [LABELS.host]: hostname(),
      [LABELS.pid]: String(process.pid),
      [LABELS.created]: new Date().toISOString(),
    },
    HostConfig: { Init: true, NetworkMode: options.network ?? 'none', ...(options.runtime === undefined ? {} : { Runtime: options.runtime }), ...extra.HostConfig },
  };
  let container: Docker.Container;
  try {
    container = await docker.createContainer(request);
  } catch (error) {
    if (statusOf(error) === 404) throw new ImageMissing(options.image, { cause: error });
    // `Unknown runtime specified runsc`: a name the daemon has no runtime under (its daemon.json's `runtimes`).
    if (statusOf(error) === 400 && options.runtime !== undefined && /runtime/i.test(engineMessage(error))) {
      throw new InvalidArgument('options.runtime', `names no runtime the daemon has: ${engineMessage(error)}`);
    }
    throw typedError(docker, '', error) ?? error;
  }
  try {
    await container.start();
  } catch (error) {
    await container.remove({ force: true }).catch(() => undefined);
    throw typedError(docker, container.id, error) ?? error;
  }
  return container;
}

/** Removes an owned container and what it holds; one already gone is fine. */
export async function removeOwnedContainer(container: Docker.Container): Promise<void> {
  try {
    await container.remove({ force: true, v: true });
  } catch (error) {
    // Gone already, or its removal already under way.
    if (statusOf(error) === 404 || statusOf(error) === 409) return;
    throw error;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the containers this adapter created and nobody will close: those
 * of this host whose creating process is gone (a crash, a SIGKILL), or, with
 * `all`, every one it labelled, whichever host made it. Resolves with the
 * ids removed.
 *
 * @example
 * ```ts
 * import Docker from 'dockerode';
 * import { sweepContainers } from '@sandstream/adapter-docker';
 * const removed = await sweepContainers(new Docker());
 * ```
 */
export async function sweepContainers(docker: Docker, options: { readonly all?: boolean } = {}): Promise<string[]> {
  const listed = await docker.listContainers({ all: true, filters: { label: [`${LABELS.owned}=true`] } });
  const here = hostname();
  const left = listed.filter((info) => {
    if (options.all === true) return true;
    const pid = Number(info.Labels[LABELS.pid]);
    return info.Labels[LABELS.host] === here && Number.isInteger(pid) && pid > 0 && !alive(pid);
  });
  await Promise.all(left.map((info) => removeOwnedContainer(docker.getContainer(info.Id))));
  return left.map((info) => info.Id);
}
