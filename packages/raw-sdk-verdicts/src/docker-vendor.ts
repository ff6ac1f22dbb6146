import { severLinks } from '@sandstream/remote';
import Docker from 'dockerode';
import { createDockerSandbox } from '@sandstream/adapter-docker';
import { startDockerd, type TestEngine } from '@sandstream/adapter-docker/engine';
import type { Process, Sandbox } from '@sandstream/types';
import { ownerProcess } from './owner-join.js';
import { createRawDockerSandbox } from './raw-docker.js';
import type { KitTarget, Side, Vendor } from './vendor.js';

/** The image of adapter-docker's own tests: busybox-static with the host programs its supervisor needs (GNU env, nice, util-linux's prlimit). */
const IMAGE = 'sandstream-busybox:verdicts';
const IMAGE_TOOLS = ['/usr/bin/env', '/usr/bin/nice', '/usr/bin/prlimit'];

/** A sandbox of one side on the run's container: the factory's, the attach hook's and the owner process's. */
export function dockerHandle(side: Side, docker: Docker, container: Docker.Container): Promise<Sandbox> | Sandbox {
  if (side === 'raw') return createRawDockerSandbox({ docker, container });
  // As adapter-docker's own kit run: a handle that borrows the run's container.
  return createDockerSandbox({ docker, container });
}

/** Docker: a dockerd of the run's own, one container for the run, as adapter-docker's kit run has it. */
export const DOCKER: Vendor = {
  id: 'docker',
  title: 'Docker',
  sdk: 'dockerode',
  adapter: '@sandstream/adapter-docker',
  backend:
    "a real dockerd of the run's own (`startDockerd` of the workspace's test support: no bridge, no iptables, everything in a temporary directory, stopped after the run), the busybox-static image of adapter-docker's tests built without a registry (with GNU `env`, `nice` and `prlimit` copied in, which the adapter's supervisor needs), and one container for the whole run (Docker's init as pid 1, no network, `sleep` as its main process), every factory call a handle that borrows it, as the adapter's own kit run has it",
  wrapping: [
    "start: `container.exec({ Cmd: argv, Env, WorkingDir, User, AttachStdin, AttachStdout: true, AttachStderr: true })`, then `exec.start({ hijack: true, stdin })`: the Engine takes argv as it is; `AttachStdin` only when the command has a pipe",
    "output: the hijacked stream split by dockerode's `docker.modem.demuxStream` into the two streams, as bytes",
    "exit: once the stream has ended (or closed, as after a kill), `exec.inspect()`: its `ExitCode` is the result's (`null` while the Engine still runs the process); no signal, since the Engine reports none",
    "signals: `stream.destroy()` for every signal, the naive kill: the Engine API has no call that signals an exec'd process ([moby/moby#9098](https://github.com/moby/moby/issues/9098)), and exec inspect's `Pid` is the host's, not the container's ([moby/moby#43208](https://github.com/moby/moby/issues/43208)), so a client of the API can only drop the connection, which the process never sees (a `docker exec <container> kill <pid>` would be a helper command with a pid learned in band, what adapter-docker does)",
    'stdin: `stream.write(bytes)` on the hijacked connection, and `stream.end()`, a half-close the Engine reads as end-of-file',
    "manifest: streaming, stdin, `user` (exec's `User`) and byte-exact output, as adapter-docker states them; no resource limits (exec has no call for them)",
  ],
  open(side: Side): KitTarget {
    let engine: TestEngine | undefined;
    let docker: Docker | undefined;
    let container: Docker.Container | undefined;
    return {
      factory: () => dockerHandle(side, docker!, container!),
      hooks: {
        async setup() {
          engine = await startDockerd();
          docker = new Docker({ socketPath: engine.socketPath });
          await engine.importBusybox(IMAGE, { tools: IMAGE_TOOLS });
          container = await docker.createContainer({
            Image: IMAGE,
            Cmd: ['sleep', '2147483647'],
            HostConfig: { Init: true, NetworkMode: 'none' },
          });
          await container.start();
        },
        async teardown() {
          // The container with whatever plain exec left running in it, then the daemon, whatever the first did.
          try {
            await container?.remove({ force: true });
          } finally {
            await engine?.stop();
          }
        },
        // Another handle on the run's container, which its close() leaves.
        attach: (sandbox) => Promise.resolve(dockerHandle(side, docker!, sandbox.native as Docker.Container)),
        // The adapter's links to a command, cut as a proxy would (attach.link-lost, owner.link-lost); the raw
        // SDK offers no way to cut its own, so its side has no hook and owner.link-lost is skipped there.
        ...(side === 'adapter' ? { sever: (process: Process) => severLinks(process) } : {}),
        // owner.crash: a second OS process borrows the same container through the run's Engine.
        owner: (sandbox) => ownerProcess({ vendor: 'docker', side, socketPath: engine!.socketPath, container: (sandbox.native as Docker.Container).id }),
      },
    };
  },
};
