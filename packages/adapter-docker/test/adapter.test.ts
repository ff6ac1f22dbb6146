/**
 * The adapter against a real dockerd: ownership (borrowed containers stay,
 * owned ones are made with no network, labelled and removed), the address
 * (DOCKER_HOST, a socket path, a client), the typed errors with what to do,
 * standard input's half-close, option checking before any request, the
 * sweep of containers a crashed host left, and the hint for a shell line
 * passed as argv (the suite every adapter runs, from
 * @sandstream/test-support/argv-hint, with Docker's own "not found").
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { InvalidArgument, SpawnFailed, type Sandbox } from '@sandstream/types';
import { describeArgvHint } from '@sandstream/test-support/argv-hint';
import { markedProcesses } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { ContainerGone, createDockerSandbox, DockerUnreachable, ImageMissing, LABELS, sweepContainers, DOCKER_CAPABILITIES } from '../src/index.js';
import { IMAGE, instrument, SKIP, useEngine, waitUntil } from './engine.js';

const file = useEngine();
const MARK = 'SANDSTREAM_DOCKER_TEST';

async function inspectStatus(container: Docker.Container): Promise<number | 'running' | 'stopped'> {
  try {
    const state = await container.inspect();
    return state.State.Running ? 'running' : 'stopped';
  } catch (error) {
    return (error as { statusCode: number }).statusCode;
  }
}

/** Runs `body` on a sandbox that borrows a fresh container, closed afterwards. */
async function borrowing(body: (sb: Sandbox<Docker.Container>) => Promise<void>): Promise<void> {
  const container = await file.container();
  const sb = await createDockerSandbox({ docker: file.docker, container: container.id });
  try {
    await body(sb);
  } finally {
    await sb.close();
  }
}

unless(describe, SKIP)('adapter-docker on a real Engine', () => {
  it('an owned container has no network, carries the labels a sweep finds, and is removed at close', async () => {
    const sb = await createDockerSandbox({ docker: file.docker, image: IMAGE });
    const state = await sb.native.inspect();
    expect(state.HostConfig.NetworkMode).toBe('none');
    expect(state.Config.Labels[LABELS.owned]).toBe('true');
    expect(state.Config.Labels[LABELS.pid]).toBe(String(process.pid));
    expect((await sb.run(['cat', '/proc/net/dev'])).stdoutText).not.toMatch(/eth0/);
    expect(sb.capabilities).toEqual(DOCKER_CAPABILITIES);
    await sb.close();
    expect(await inspectStatus(sb.native)).toBe(404);
  });

  it('an owned container joins the network it is asked for', async () => {
    const sb = await createDockerSandbox({ docker: file.docker, image: IMAGE, network: 'host' });
    try {
      expect((await sb.native.inspect()).HostConfig.NetworkMode).toBe('host');
    } finally {
      await sb.close();
    }
  });

  it('a borrowed container stays at close, and what a command left running in it (out of its session) is ended', async () => {
    const container = await file.container();
    const run = `borrowed-${process.pid}`;
    const sb = await createDockerSandbox({ docker: file.docker, container: container.id });
    expect(sb.native.id).toBe(container.id);
    // An escapee: a new session, still carrying the command's tag.
    const result = await sb.run(['sh', '-c', 'setsid sleep 1000 < /dev/null > /dev/null 2>&1 & echo $!'], { env: { [MARK]: run } });
    expect(result.exitCode).toBe(0);
    expect(markedProcesses(MARK, run).length).toBe(1);
    await sb.close();
    await waitUntil(() => markedProcesses(MARK, run).length === 0, 10_000, 'the escapee to be swept');
    expect(await inspectStatus(container)).toBe('running');
  });

  it('finds the Engine through DOCKER_HOST, a socket path or a client, and reads the commands\' output as bytes', async () => {
    const container = await file.container();
    const before = process.env['DOCKER_HOST'];
    process.env['DOCKER_HOST'] = `unix://${file.engine.socketPath}`;
    try {
      const ways = [
        await createDockerSandbox({ container: container.id }),
        await createDockerSandbox({ socketPath: file.engine.socketPath, container: container.id }),
        await createDockerSandbox({ docker: file.docker, container }),
      ];
      for (const sb of ways) {
        const result = await sb.run(['sh', '-c', 'printf "\\377\\000a"; printf "\\376" >&2; exit 7']);
        expect([...result.stdout, -1, ...result.stderr, result.exitCode]).toEqual([255, 0, 97, -1, 254, 7]);
        await sb.close();
      }
    } finally {
      if (before === undefined) delete process.env['DOCKER_HOST'];
      else process.env['DOCKER_HOST'] = before;
    }
  });

  it('a daemon out of reach, a missing image and a gone or stopped container are typed errors that say what to do', async () => {
    const unreachable = await createDockerSandbox({ socketPath: `${file.engine.dir}/nothing.sock`, image: IMAGE }).catch((error: unknown) => error);
    expect(unreachable).toBeInstanceOf(DockerUnreachable);
    expect((unreachable as Error).message).toMatch(/start dockerd, or point DOCKER_HOST/);
    const missing = await createDockerSandbox({ docker: file.docker, image: 'sandstream-no-such-image:1' }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(ImageMissing);
    expect((missing as Error).message).toMatch(/never pulls/);
    const gone = await createDockerSandbox({ docker: file.docker, container: 'sandstream-no-such-container' }).catch((error: unknown) => error);
    expect(gone).toBeInstanceOf(ContainerGone);
    const stopped = await file.container();
    await stopped.kill();
    const refused = await createDockerSandbox({ docker: file.docker, container: stopped.id }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ContainerGone);
    expect((refused as ContainerGone).state).toBe('stopped');
  });

  it('options are checked before any request: unknown keys, a missing image or container, malformed values', async () => {
    const docker = new Docker({ socketPath: file.engine.socketPath });
    const seen = instrument(docker);
    const bad: unknown[] = [
      { docker, image: IMAGE, imagee: 'x' },
      { docker, container: 'c', image: IMAGE },
      { docker },
      { docker, image: '' },
      { docker, container: 5 },
      { docker, image: IMAGE, command: [] },
      { docker, image: IMAGE, env: { A: 1 } },
      { docker, image: IMAGE, graceMs: -1 },
      { docker, image: IMAGE, capabilities: { nope: false } },
      { docker: {}, image: IMAGE },
      { docker, image: IMAGE, runtime: '' },
      { docker, image: IMAGE, runtime: 7 },
      // A borrowed container exists: its runtime was chosen at its creation.
      { docker, container: 'c', runtime: 'runsc' },
    ];
    for (const options of bad) {
      await expect(createDockerSandbox(options as never), JSON.stringify(options, (key, value) => (key === 'docker' ? typeof value : value))).rejects.toBeInstanceOf(InvalidArgument);
    }
    expect(seen.requests).toEqual([]);
  });

  it('standard input half-closed over the hijacked connection is end-of-file to the command, and its output still comes back', async () => {
    await borrowing(async (sb) => {
      await using proc = sb.stream(['sh', '-c', 'while IFS= read -r l; do echo "got $l"; done; echo eof; sleep 0.2; echo after'], { stdin: 'pipe' });
      const chunks: string[] = [];
      const reading = (async () => {
        for await (const chunk of proc) if (chunk.stream === 'stdout') chunks.push(Buffer.from(chunk.data).toString());
      })();
      await proc.stdin!.write('one\n');
      await waitUntil(() => chunks.join('').includes('got one\n'), 10_000, 'the first line echoed');
      // Still open: the command is waiting for more, not at end-of-file.
      expect(chunks.join('')).not.toContain('eof');
      await proc.stdin!.end();
      await reading;
      expect((await proc.wait()).exitCode).toBe(0);
      expect(chunks.join('')).toBe('got one\neof\nafter\n');
    });
  });

  it('a write the Engine holds back for a slow reader waits for it (the probe finds the pipe held), and every byte arrives', async () => {
    // A client of its own, whose requests are counted: the probes are seen as they are made.
    const docker = new Docker({ socketPath: file.engine.socketPath });
    const seen = instrument(docker);
    const container = await file.container();
    const sb = await createDockerSandbox({ docker, container: container.id });
    try {
      const dir = file.scratch;
      await using proc = sb.stream(['sh', '-c', 'while [ ! -e "$1/go" ]; do sleep 0.05; done; wc -c', 'sh', dir], { stdin: 'pipe' });
      const reading = (async () => {
        let out = '';
        for await (const chunk of proc) out += Buffer.from(chunk.data).toString();
        return out;
      })();
      // Far more than the pipe, the sockets and dockerd's buffers hold: the write stalls until the command reads.
      const size = 16 * 1024 * 1024;
      const writing = proc.stdin!.write(new Uint8Array(size));
      let settled = false;
      void writing.finally(() => (settled = true)).catch(() => undefined);
      // The probe runs more than once while nothing reads: a third probe is made only after two
      // answered that the pipe is held. (A wrong StdinClosed fails the case whenever it comes:
      // before the third probe through `settled`, after it through `await writing`.)
      await waitUntil(() => seen.probes >= 3 || settled, 30_000, 'three standard input probes while nothing reads');
      expect(settled).toBe(false);
      writeFileSync(`${dir}/go`, '');
      await writing;
      await proc.stdin!.end();
      expect((await reading).trim()).toBe(String(size));
      expect((await proc.wait()).exitCode).toBe(0);
    } finally {
      await sb.close();
    }
  });

  it('a start the Engine refuses (no such directory, account or shell) is SpawnFailed with its reason', async () => {
    await borrowing(async (sb) => {
      const cwd = await sb.run(['true'], { cwd: '/no/such/dir' }).catch((error: unknown) => error);
      expect(cwd).toBeInstanceOf(SpawnFailed);
      expect((cwd as Error).message).toMatch(/no such file or directory/);
      const user = await sb.run(['true'], { user: 'no-such-account' }).catch((error: unknown) => error);
      expect(user).toBeInstanceOf(SpawnFailed);
      expect((user as Error).message).toMatch(/no-such-account/);
    });
    const container = await file.container();
    const noShell = await createDockerSandbox({ docker: file.docker, container: container.id, shellPath: '/no/shell' });
    await expect(noShell.run(['true'])).rejects.toBeInstanceOf(SpawnFailed);
    await noShell.close();
  });

  it('sweepContainers removes the owned containers of a process of this host that is gone, and no other', async () => {
    const dead = spawnSync('true').pid!;
    const left = await file.docker.createContainer({ Image: IMAGE, Cmd: ['sleep', '1000'], Labels: { [LABELS.owned]: 'true', [LABELS.host]: hostname(), [LABELS.pid]: String(dead) } });
    const live = await createDockerSandbox({ docker: file.docker, image: IMAGE });
    try {
      const removed = await sweepContainers(file.docker);
      expect(removed).toEqual([left.id]);
      expect(await inspectStatus(left)).toBe(404);
      expect(await inspectStatus(live.native)).toBe('running');
    } finally {
      await live.close();
    }
  });

  let hinted: Sandbox<Docker.Container> | undefined;
  afterAll(async () => {
    await hinted?.close();
  });
  describeArgvHint('adapter-docker', async () => (hinted ??= await createDockerSandbox({ docker: file.docker, container: (await file.container()).id })));
});
