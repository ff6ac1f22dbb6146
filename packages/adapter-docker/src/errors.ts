/**
 * The Docker adapter's typed errors. Each is a `TransportError` (code
 * `TRANSPORT`, so code that matches on the contract's codes keeps working)
 * whose message says what happened and what to do.
 */
import { TransportError } from '@sandstream/types';

/** The Engine API could not be reached: no daemon at the address, no permission on its socket, or no answer within `requestTimeoutMs`. */
export class DockerUnreachable extends TransportError {
  constructor(
    /** Where the adapter looked: `unix:///var/run/docker.sock`, `tcp://host:2375`... */
    readonly address: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(
      `the Docker Engine at ${address} cannot be reached (${reason}): start dockerd, or point DOCKER_HOST or options.socketPath at a running one, and check that this user may open its socket`,
      options,
    );
  }
}

/**
 * The Docker Engine restarted under a command: it stopped answering, and the
 * one that answered again no longer knows the command's exec (exec instances
 * live in dockerd's memory). The container runs on (the daemon's live
 * restore kept it), so the command may have too; its exit status, and what
 * it printed after the restart, are lost.
 */
export class DockerRestarted extends TransportError {
  constructor(
    /** Where the Engine answers: `unix:///var/run/docker.sock`, `tcp://host:2375`... */
    readonly address: string,
    options?: ErrorOptions,
  ) {
    super(
      `the Docker Engine at ${address} restarted while a command ran in a container it kept running (live restore): the command's exit status and its output since the restart are lost; run the command again`,
      options,
    );
  }
}

/** The image the adapter was asked to create a container from is not on the daemon. */
export class ImageMissing extends TransportError {
  constructor(
    readonly image: string,
    options?: ErrorOptions,
  ) {
    super(`the image ${JSON.stringify(image)} is not on this Docker Engine: pull or build it first (docker pull ${image}); the adapter never pulls`, options);
  }
}

/**
 * The container went away under a command: removed, stopped or killed (an
 * OOM kill of its init, `docker rm -f`, `docker stop`). Nothing of the
 * command can still run in it.
 */
export class ContainerGone extends TransportError {
  constructor(
    readonly container: string,
    /** `removed` or `stopped`. */
    readonly state: 'removed' | 'stopped',
    options?: ErrorOptions,
  ) {
    super(
      `the container ${container.slice(0, 12)} was ${state} while the adapter used it: every command in it has ended; start the container again (or create a sandbox on a new one) and run the command again`,
      options,
    );
  }
}

/** The container is paused: nothing in it runs, and the Engine refuses execs until it is unpaused. */
export class ContainerPaused extends TransportError {
  constructor(
    readonly container: string,
    options?: ErrorOptions,
  ) {
    super(`the container ${container.slice(0, 12)} is paused: docker unpause it, then close the sandbox (which ends what this adapter started) or run the command again`, options);
  }
}
