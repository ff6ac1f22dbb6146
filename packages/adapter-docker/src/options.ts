/**
 * The options of `createDockerSandbox` and their checking: unknown keys
 * and malformed values are `InvalidArgument` naming the key, before any
 * request.
 */
import type Docker from 'dockerode';
import { InvalidArgument } from '@sandstream/types';
import { REMOTE_OPTION_KEYS, type RemoteSandboxOptions } from '@sandstream/remote';
import { checkOptionKeys } from '@sandstream/types/runtime';

/**
 * Settings that apply whichever way the container is obtained: the remote
 * kit's vocabulary (`env`, `cwd` (default: the container's), `user`
 * (default: the container's), `graceMs`, `killWaitMs`, `requestTimeoutMs`
 * (helper execs and inspects), `shellPath`, `envPath` (GNU `env(1)`, for the
 * exact environment and SIGINT's default), `prlimitPath`, `capabilities`
 * (`resource-limits` off for an image without `prlimit`, say),
 * `recordBase`), and how the Engine is reached.
 */
export interface DockerCommonOptions extends RemoteSandboxOptions {
  /** The client to use (default: one on `socketPath`, else on `DOCKER_HOST`, else on `/var/run/docker.sock`). */
  readonly docker?: Docker;
  /** The Engine's unix socket (ignored when `docker` is given). */
  readonly socketPath?: string;
}

/** A container the caller has: borrowed. `close()` ends the commands this adapter started and leaves the container. */
export interface DockerExistingContainerOptions extends DockerCommonOptions {
  /** Its id or name, or the client's container object. */
  readonly container: string | Docker.Container;
}

/** A container the adapter creates from `image`: owned, removed at `close()`. */
export interface DockerNewContainerOptions extends DockerCommonOptions {
  readonly container?: undefined;
  /** The image, already on the daemon (the adapter never pulls). */
  readonly image: string;
  /** A network to attach the container to (`bridge`, a user-defined one); default none at all. */
  readonly network?: string;
  /** The container's main process (default `sleep 2147483647`, under Docker's init). */
  readonly command?: readonly string[];
  /**
   * The OCI runtime of the container, by the name the daemon registered it under (`HostConfig.Runtime`):
   * `'runsc'` for gVisor, whose kernel in user space stands between the commands and the host's
   * (see the README's "Under gVisor"). Default: the daemon's default runtime (usually `runc`). A
   * borrowed container has its runtime already: `runtimeOf(sandbox)` reads it.
   */
  readonly runtime?: string;
  /** Fields of the Engine's create request merged over the adapter's (`HostConfig.Binds`, `HostConfig.Memory`...). */
  readonly create?: Docker.ContainerCreateOptions;
}

export type DockerSandboxOptions = DockerExistingContainerOptions | DockerNewContainerOptions;

const COMMON_KEYS = [...REMOTE_OPTION_KEYS, 'docker', 'socketPath'];
const EXISTING_KEYS = new Set([...COMMON_KEYS, 'container']);
const NEW_KEYS = new Set([...COMMON_KEYS, 'container', 'image', 'network', 'command', 'runtime', 'create']);

function nonEmptyString(name: string, value: unknown, optional: boolean): void {
  if (value === undefined && optional) return;
  if (typeof value !== 'string' || value === '' || value.includes('\0')) throw new InvalidArgument(`options.${name}`, 'must be a non-empty string');
}

function plainObject(name: string, value: unknown): void {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) throw new InvalidArgument(`options.${name}`, 'must be an object');
}

/** Checks what `createDockerSandbox` was given; throws `InvalidArgument` naming the first bad key. */
export function checkDockerOptions(options: unknown): asserts options is DockerSandboxOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidArgument('options', 'must be an object');
  const given = options as Record<string, unknown>;
  const borrowed = given['container'] !== undefined;
  // Said before the unknown-key check, which would only call it unknown: the container exists, and
  // its runtime was chosen when it was created.
  if (borrowed && given['runtime'] !== undefined) {
    throw new InvalidArgument('options.runtime', 'applies only to a container the adapter creates (`image`): a borrowed container already runs under its own runtime (runtimeOf() reads it)');
  }
  checkOptionKeys(options, borrowed ? EXISTING_KEYS : NEW_KEYS);
  if (borrowed) {
    const container = given['container'];
    if (typeof container !== 'string' && (typeof container !== 'object' || container === null || typeof (container as { id?: unknown }).id !== 'string')) {
      throw new InvalidArgument('options.container', "must be a container's id or name, or the client's container object");
    }
    nonEmptyString('container', typeof container === 'string' ? container : (container as { id: string }).id, false);
  } else {
    if (given['image'] === undefined) throw new InvalidArgument('options', 'needs `container` (a container to borrow) or `image` (one to create and own)');
    nonEmptyString('image', given['image'], false);
    nonEmptyString('network', given['network'], true);
    nonEmptyString('runtime', given['runtime'], true);
    plainObject('create', given['create']);
    const command = given['command'];
    if (command !== undefined && (!Array.isArray(command) || command.length === 0 || command.some((word) => typeof word !== 'string'))) {
      throw new InvalidArgument('options.command', 'must be a non-empty array of strings');
    }
  }
  for (const name of ['socketPath', 'cwd', 'user', 'shellPath', 'envPath', 'prlimitPath', 'scriptPath']) nonEmptyString(name, given[name], true);
  plainObject('env', given['env']);
  const docker = given['docker'];
  if (docker !== undefined && (typeof docker !== 'object' || docker === null || typeof (docker as { getContainer?: unknown }).getContainer !== 'function')) {
    throw new InvalidArgument('options.docker', 'must be a dockerode client');
  }
  for (const [name, value] of Object.entries((given['env'] as Record<string, unknown> | undefined) ?? {})) {
    if (typeof value !== 'string') throw new InvalidArgument(`options.env.${name}`, 'must be a string');
  }
}
