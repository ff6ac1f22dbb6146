/**
 * The Docker Engine of one test file: a dockerd of its own (started in
 * `beforeAll`, stopped in `afterAll`), the test image (busybox-static with
 * GNU env, nice and util-linux's prlimit and script copied in, so the supervisor's
 * tools and limits are all there), and containers the tests borrow, bind
 * mounting what a suite needs from the host. Where no dockerd can start the
 * file's tests are skipped with the reason; where `CI` is set they run and
 * fail instead.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll } from 'vitest';
import { dockerdMissing, gvisorConfig, runscMissing, startDockerd, type TestEngine } from '../src/engine/index.js';
import { CHANNEL_NAME } from '@sandstream/remote';
import { STDIN_PROBE_NAME } from '@sandstream/remote';

/** Why this file's tests are skipped, or undefined to run them (on CI: always run). */
export const SKIP: string | undefined = process.env['CI'] !== undefined ? undefined : dockerdMissing();

/** Why the gVisor variants are skipped, or undefined to run them (on CI: always run; CI installs runsc). */
export const GVISOR_SKIP: string | undefined = process.env['CI'] !== undefined ? undefined : (dockerdMissing() ?? runscMissing());

/** The runtime of the gVisor variants' containers: `runsc`, as `gvisorConfig()` registers it. */
export const GVISOR = 'runsc';

/** The programs from the host the test image carries, with their libraries. */
export const IMAGE_TOOLS = ['/usr/bin/env', '/usr/bin/nice', '/usr/bin/prlimit', '/usr/bin/script'];

export const IMAGE = 'sandstream-busybox:test';

export interface FileEngine {
  engine: TestEngine;
  docker: Docker;
  /** A directory of the host bind-mounted at the same path into containers from {@link FileEngine.container}. */
  scratch: string;
  /** The OCI runtime of the containers: `runc` (the daemon's default), or {@link GVISOR}. */
  runtime: string;
  /** A running container from the test image (removed in `afterAll`), with `binds` and the scratch directory mounted. */
  container(options?: { binds?: string[]; env?: string[] }): Promise<Docker.Container>;
}

/**
 * Starts this file's engine in `beforeAll` and stops it in `afterAll` (in a
 * `describe`, that block's); `librariesOf` are host programs whose libraries
 * the image gets (for a program bind-mounted in, such as node);
 * `liveRestore` starts dockerd with `--live-restore`; `gvisor` registers
 * runsc on it and makes {@link FileEngine.container}'s containers under it.
 */
export function useEngine(options: { librariesOf?: string[]; liveRestore?: boolean; gvisor?: boolean } = {}): FileEngine {
  const made: Docker.Container[] = [];
  const file = {} as FileEngine;
  const gvisor = options.gvisor === true;
  file.runtime = gvisor ? GVISOR : 'runc';
  beforeAll(async () => {
    if ((gvisor ? GVISOR_SKIP : SKIP) !== undefined) return;
    file.engine = await startDockerd({ liveRestore: options.liveRestore === true, ...(gvisor ? { config: gvisorConfig() } : {}) });
    file.docker = new Docker({ socketPath: file.engine.socketPath });
    file.scratch = realpathSync(mkdtempSync(join(tmpdir(), 'ss-docker-')));
    await file.engine.importBusybox(IMAGE, { tools: IMAGE_TOOLS, librariesOf: options.librariesOf ?? [] });
    file.container = async ({ binds = [], env = [] } = {}) => {
      const container = await file.docker.createContainer({
        Image: IMAGE,
        Cmd: ['sleep', '2147483647'],
        Env: env,
        HostConfig: { Init: true, NetworkMode: 'none', Binds: [`${file.scratch}:${file.scratch}`, ...binds], ...(gvisor ? { Runtime: GVISOR } : {}) },
      });
      made.push(container);
      await container.start();
      return container;
    };
  }, 120_000);
  afterAll(async () => {
    if (file.engine === undefined) return;
    await Promise.all(made.map((container) => container.remove({ force: true }).catch(() => undefined)));
    await file.engine.stop();
    if (file.scratch !== undefined) rmSync(file.scratch, { recursive: true, force: true });
  }, 60_000);
  return file;
}

/** What {@link instrument} counts on a real client. */
export interface Seen {
  /** Requests sent, by path (`POST /exec/ID/start` as `POST /exec/start`). */
  readonly requests: string[];
  /** Hijacked exec starts: the commands' starts, helpers and their channel aside. */
  starts: number;
  /** Starts of the helpers' channel (one long-lived exec per account, `@sandstream/remote`). */
  channels: number;
  /** The commands' hijacked connections still open (not the channel's). */
  readonly sockets: Set<Socket>;
  /** Execs of the standard input probe created (one each time a held-back write is checked). */
  probes: number;
}

/**
 * Counts what a real dockerode client sends (wrapping its modem's `dial`)
 * and keeps the hijacked connections, which a test may cut.
 */
export function instrument(docker: Docker): Seen {
  const seen: Seen = { requests: [], starts: 0, channels: 0, sockets: new Set(), probes: 0 };
  const modem = docker.modem as {
    dial(options: { path: string; method: string; hijack?: boolean; options?: { Cmd?: string[] } }, callback: (error: unknown, data: unknown) => void): void;
  };
  const dial = modem.dial.bind(modem);
  /** The exec ids of helper channels, learnt from their creation. */
  const channelExecs = new Set<string>();
  modem.dial = (options, callback) => {
    const path = options.path.replace(/\?.*$/, '').replace(/\/(containers|exec)\/[^/]+\//, '/$1/');
    seen.requests.push(`${options.method} ${path}`);
    const channelCreate = path === '/containers/exec' && options.options?.Cmd?.[3] === CHANNEL_NAME;
    if (path === '/containers/exec' && options.options?.Cmd?.[3] === STDIN_PROBE_NAME) seen.probes += 1;
    const execId = /\/exec\/([^/]+)\/start/.exec(options.path)?.[1];
    const channel = execId !== undefined && channelExecs.has(execId);
    const hijacked = options.hijack === true && path === '/exec/start' && !channel;
    if (hijacked) seen.starts += 1;
    if (channel) seen.channels += 1;
    dial(options, (error, data) => {
      if (channelCreate && typeof (data as { Id?: unknown } | null)?.Id === 'string') channelExecs.add((data as { Id: string }).Id);
      if (hijacked && data !== null && data !== undefined) {
        const socket = data as Socket;
        seen.sockets.add(socket);
        socket.once('close', () => seen.sockets.delete(socket));
      }
      callback(error, data);
    });
  };
  return seen;
}

/** Resolves once `condition()` holds; rejects naming `what` after `ms` (test-support's bounded wait). */
export { waitFor as waitUntil } from '@sandstream/test-support/timing';
