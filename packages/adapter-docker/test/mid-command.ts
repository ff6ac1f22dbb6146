/**
 * The start of a fault test: a borrowed container, a sandbox on a counted
 * client, and a command in it that has started and printed `ready`, every
 * process of it (the supervisor included) carrying {@link MARK} in its
 * environment, where the host's `/proc` finds it: the container's
 * processes are the host's. Not under gVisor, whose processes live in its
 * kernel in user space: there the container's own `/proc` is read, through
 * `runsc exec` (gvisor.ts), which needs no dockerd.
 */
import { expect } from 'vitest';
import Docker from 'dockerode';
import type { Process, Sandbox } from '@sandstream/types';
import { markedProcesses, type MarkedProcess } from '@sandstream/test-support/processes';
import { createDockerSandbox } from '../src/index.js';
import { GVISOR, instrument, type FileEngine, type Seen } from './engine.js';
import { markedInGvisor } from './gvisor.js';

export const MARK = 'SANDSTREAM_DOCKER_FAULT';
/** Every outcome must come within this bound, unless a test states its own (the requests' own bounds are 2 s). */
export const BOUND_MS = 20_000;

export interface Setup {
  sb: Sandbox<Docker.Container>;
  container: Docker.Container;
  seen: Seen;
  proc: Process;
  /** The value of {@link MARK} on the command's processes. */
  run: string;
  /** The command's processes still live, wherever the runtime keeps them. */
  left(): Promise<MarkedProcess[]>;
}

/** The live processes of `container` marked `run`: the host's `/proc` under runc, the container's own under gVisor. */
export function markedIn(file: FileEngine, container: Docker.Container, run: string): Promise<MarkedProcess[]> {
  if (file.runtime === GVISOR) return markedInGvisor(file.engine, container.id, MARK, run);
  return Promise.resolve(markedProcesses(MARK, run));
}

/** A borrowed container, and a command in it that has started and printed `ready`. */
export async function started(file: FileEngine, name: string, options: { requestTimeoutMs?: number } = {}): Promise<Setup> {
  const container = await file.container();
  const docker = new Docker({ socketPath: file.engine.socketPath });
  const seen = instrument(docker);
  const sb = await createDockerSandbox({ docker, container: container.id, requestTimeoutMs: options.requestTimeoutMs ?? 2_000, graceMs: 300, killWaitMs: 2_000 });
  const run = `${name}-${process.pid}`;
  const proc = sb.stream(['sh', '-c', 'sleep 1000 & echo ready; wait'], { env: { [MARK]: run } });
  const iterator = proc[Symbol.asyncIterator]();
  const first = await iterator.next();
  expect(Buffer.from((first.value as { data: Uint8Array }).data).toString()).toBe('ready\n');
  const left = (): Promise<MarkedProcess[]> => markedIn(file, container, run);
  expect((await left()).length).toBeGreaterThan(0);
  return { sb, container, seen, proc, run, left };
}

/** How the command settled (its result, or its error), checked to come within `boundMs`. */
export async function outcome(proc: Process, boundMs = BOUND_MS): Promise<unknown> {
  const t0 = performance.now();
  const settled = await proc.wait().then((result) => result, (error: unknown) => error);
  expect(performance.now() - t0).toBeLessThan(boundMs);
  return settled;
}
