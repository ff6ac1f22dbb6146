/**
 * The start of a fault test: a borrowed container, a sandbox on a counted
 * client, and a command in it that has started and printed `ready`, every
 * process of it (the supervisor included) carrying {@link MARK} in its
 * environment, where the host's `/proc` finds it: the container's
 * processes are the host's.
 */
import { expect } from 'vitest';
import Docker from 'dockerode';
import type { Process, Sandbox } from '@sandstream/types';
import { markedProcesses } from '@sandstream/test-support/processes';
import { createDockerSandbox } from '../src/index.js';
import { instrument, type FileEngine, type Seen } from './engine.js';

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
  expect(markedProcesses(MARK, run).length).toBeGreaterThan(0);
  return { sb, container, seen, proc, run };
}

/** How the command settled (its result, or its error), checked to come within `boundMs`. */
export async function outcome(proc: Process, boundMs = BOUND_MS): Promise<unknown> {
  const t0 = performance.now();
  const settled = await proc.wait().then((result) => result, (error: unknown) => error);
  expect(performance.now() - t0).toBeLessThan(boundMs);
  return settled;
}
