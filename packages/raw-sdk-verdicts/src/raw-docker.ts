/**
 * Plain `docker exec` behind the Sandstream contract, through dockerode
 * (the client adapter-docker uses), with no fix of ours: each call of the
 * driver is the one Engine API call that does that job, as dockerode's
 * README shows it.
 *
 * - start: `container.exec({ Cmd: argv, Env, WorkingDir, User, AttachStdin,
 *   AttachStdout: true, AttachStderr: true })`, then `exec.start({ hijack:
 *   true, stdin })` (the Engine takes argv as it is);
 * - output: the hijacked stream split by `docker.modem.demuxStream` into
 *   the two streams, as bytes;
 * - exit: once the stream has ended (or closed), `exec.inspect()`, its
 *   `ExitCode` as it comes (`null` while the Engine still runs the
 *   process), never a signal: the Engine reports none;
 * - every signal: `stream.destroy()`, dropping the connection. The Engine
 *   API has no call that signals an exec'd process (moby/moby#9098), and
 *   exec inspect's `Pid` is the host's, not the container's (moby/moby#43208),
 *   so ending the attach is all its client has; the process does not see it;
 * - stdin: `stream.write(bytes)`, and `stream.end()` (a half-close, which
 *   the Engine reads as end-of-file);
 * - errors: dockerode's own, and the stream's (`error` events), for the
 *   runtime to report (as `TransportError`).
 */
import type { Duplex } from 'node:stream';
import { Writable } from 'node:stream';
import type Docker from 'dockerode';
import type { CapabilityManifest, Sandbox } from '@sandstream/types';
import { defineSandbox, type CommandSpec, type DriverEvents, type ProcessDriver, type StartedProcess } from '@sandstream/types/runtime';

/** Options of {@link createRawDockerSandbox}. */
export interface RawDockerOptions {
  /** The client. */
  readonly docker: Docker;
  /** A running container the caller owns; `close()` leaves it. */
  readonly container: Docker.Container;
  /** Time between SIGTERM and SIGKILL in the runtime's teardown, in ms (the runtime's default when omitted). */
  readonly graceMs?: number;
}

class RawDockerDriver implements ProcessDriver {
  private stream: Duplex | undefined;

  constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    private readonly command: CommandSpec,
  ) {}

  async start(events: DriverEvents): Promise<StartedProcess> {
    const { argv, env, cwd, user, stdin } = this.command;
    const exec = await this.container.exec({
      Cmd: [...argv],
      Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
      ...(cwd === undefined ? {} : { WorkingDir: cwd }),
      ...(user === undefined ? {} : { User: user }),
      AttachStdin: stdin === 'pipe',
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: true, stdin: stdin === 'pipe' })) as Duplex;
    this.stream = stream;
    this.docker.modem.demuxStream(stream, sink((data) => events.output('stdout', data)), sink((data) => events.output('stderr', data)));
    // The stream is done once the Engine ends it ('end', also while a write of ours is pending), or
    // once it is destroyed (the kill below: 'close' without 'end'), or broken ('error', which Node
    // would otherwise throw): whichever comes first.
    let done = false;
    const finished = (error?: Error): void => {
      if (done) return;
      done = true;
      if (error !== undefined) return events.fail(error);
      exec.inspect().then(
        (state) => events.exit({ exitCode: state.ExitCode, signal: null }),
        (failure: unknown) => events.fail(failure instanceof Error ? failure : new Error(String(failure))),
      );
    };
    stream.on('error', finished);
    stream.once('end', () => finished());
    stream.once('close', () => finished());
    return { commandId: exec.id };
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    const stream = this.stream!;
    await new Promise<void>((resolve, reject) => stream.write(data, (error) => (error ? reject(error) : resolve())));
  }

  async closeStdin(): Promise<void> {
    if (this.command.stdin === 'pipe') this.stream!.end();
  }

  async signal(): Promise<void> {
    this.stream!.destroy();
  }

  // The connection, once the runtime is done with the command (a write the Engine never took up keeps it open).
  async release(): Promise<void> {
    this.stream?.destroy();
  }
}

/** A writable stream that hands each chunk `demuxStream` writes to `take`. */
function sink(take: (data: Uint8Array) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      take(chunk);
      done();
    },
  });
}

/**
 * A Sandstream sandbox over a Docker container the caller owns; `close()`
 * ends the commands it started (through the runtime, as far as plain
 * `docker exec` can) and leaves the container.
 */
export function createRawDockerSandbox(options: RawDockerOptions): Sandbox<Docker.Container> {
  const { docker, container } = options;
  const capabilities: CapabilityManifest = {
    streaming: true,
    stdin: true,
    // Exec has no call for limits (adapter-docker puts prlimit in front of the command).
    'resource-limits': false,
    // Exec's `User`.
    user: true,
    // What adapter-docker states, by leaving it out (absent is true): the multiplexed stream carries bytes.
  };
  return defineSandbox({
    name: 'raw-docker',
    capabilities,
    native: container,
    ...(options.graceMs === undefined ? {} : { graceMs: options.graceMs }),
    createDriver: (command) => new RawDockerDriver(docker, container, command),
  });
}
