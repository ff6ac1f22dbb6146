/**
 * Faults a real Engine has, mid-command: the container killed, paused or
 * removed, the client's connection cut, the Engine silent (dockerd restarted:
 * restart.test.ts).
 * Each is a bounded, typed outcome; the command is started once (never
 * again after the fault); nothing of it is left running (looked for where
 * the runtime keeps the container's processes: mid-command.ts).
 * Described by faults.test.ts (runc) and faults-gvisor.test.ts (runsc).
 */
import { describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { DEFAULT_OWNER_LEASE } from '@sandstream/remote';
import { TransportError } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { ContainerGone, createDockerSandbox, DockerUnreachable } from '../src/index.js';
import { instrument, waitUntil, type FileEngine } from './engine.js';
import { MARK, markedIn, outcome, started } from './mid-command.js';

/** Describes the fault tests over `file`'s engine; `skip` is why not (printed), or undefined. */
export function describeFaults(file: FileEngine, title: string, skip: string | undefined): void {
  unless(describe, skip)(title, () => {
    it('the container killed: TransportError caused by ContainerGone (stopped), or death by SIGKILL, one start, nothing left', { timeout: 60_000 }, async () => {
      const { sb, container, seen, proc, left } = await started(file, 'killed');
      await container.kill();
      const settled = await outcome(proc);
      if (settled instanceof Error) {
        expect(settled).toBeInstanceOf(TransportError);
        expect(settled.cause).toBeInstanceOf(ContainerGone);
        expect((settled.cause as ContainerGone).state).toBe('stopped');
      } else {
        // The kill reached the command before its supervisor, which lived long enough to report the
        // command's death: a true result, the command killed by the container's SIGKILL.
        expect(settled).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
      }
      await sb.close();
      expect(seen.starts).toBe(1);
      await waitUntil(async () => (await left()).length === 0, 10_000, 'nothing of the command left');
    });

    it('the container removed: TransportError caused by ContainerGone (removed, or stopped on its way out), or death by SIGKILL, one start, nothing left', { timeout: 60_000 }, async () => {
      const { sb, container, seen, proc, left } = await started(file, 'removed');
      await container.remove({ force: true });
      const settled = await outcome(proc);
      if (settled instanceof Error) {
        expect(settled).toBeInstanceOf(TransportError);
        expect(settled.cause).toBeInstanceOf(ContainerGone);
        // A removal with force kills first: the Engine may still be removing when the end is read.
        expect(['removed', 'stopped']).toContain((settled.cause as ContainerGone).state);
      } else {
        // As when the container is killed: the command died first and its supervisor reported it.
        expect(settled).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
      }
      await sb.close();
      expect(seen.starts).toBe(1);
      await waitUntil(async () => (await left()).length === 0, 10_000, 'nothing of the command left');
    });

    it('the client\'s connection cut: TransportError, the tree killed through a new connection, one start, nothing left', { timeout: 60_000 }, async () => {
      const { sb, seen, proc, left } = await started(file, 'cut');
      expect(seen.sockets.size).toBe(1);
      for (const socket of seen.sockets) socket.destroy();
      const error = await outcome(proc);
      expect(error).toBeInstanceOf(TransportError);
      // Killed before the error was reported, not at close.
      await waitUntil(async () => (await left()).length === 0, 10_000, 'nothing of the command left');
      await sb.close();
      expect(seen.starts).toBe(1);
    });

    it('the Engine silent as the link breaks: TransportError caused by DockerUnreachable, saying the tree may still run; once it answers, the sweeps end it', { timeout: 60_000 }, async () => {
      // dockerd stopped (SIGSTOP) keeps its socket: connections are taken and never answered, as
      // by a daemon on its way down. Its containers run on.
      const { sb, seen, proc, left } = await started(file, 'silent');
      const daemon = file.engine.pid!;
      process.kill(daemon, 'SIGSTOP');
      const stoppedAt = performance.now();
      try {
        for (const socket of seen.sockets) socket.destroy();
        const error = await outcome(proc);
        expect(error).toBeInstanceOf(TransportError);
        expect((error as Error).cause).toBeInstanceOf(DockerUnreachable);
        expect(((error as Error).cause as Error).message).toMatch(/no answer within 2000 ms/);
        expect((error as Error).message).toMatch(/could not be confirmed killed .* and may still run/);
        const still = (await left()).map((p) => p.cmdline);
        if (!still.includes('sleep 1000')) {
          // Only the owner lease (spec 1.4) may have ended it meanwhile: its renewals stopped with
          // the Engine, and the supervisor ends the tree once the lease lapses, at the earliest a
          // lapse after the last renewal, which came at most a renewal period before the stop.
          // Under gVisor, where every request and exec is slower, the error can come that late.
          expect(performance.now() - stoppedAt).toBeGreaterThanOrEqual(DEFAULT_OWNER_LEASE.lapseMs - DEFAULT_OWNER_LEASE.renewMs);
        }
      } finally {
        process.kill(daemon, 'SIGCONT');
      }
      await waitUntil(async () => (await left()).length === 0, 20_000, 'nothing of the command left once the Engine answers');
      await sb.close();
      expect(seen.starts).toBe(1);
    });

    it('the container paused: a timeout ends in a bounded TransportError; once unpaused, close() ends the tree; one start', { timeout: 60_000 }, async () => {
      const container = await file.container();
      const docker = new Docker({ socketPath: file.engine.socketPath });
      const seen = instrument(docker);
      const sb = await createDockerSandbox({ docker, container: container.id, requestTimeoutMs: 2_000, graceMs: 300, killWaitMs: 2_000 });
      const run = `paused-${process.pid}`;
      const proc = sb.stream(['sh', '-c', 'sleep 1000 & echo ready; wait'], { env: { [MARK]: run }, timeout: 1_000 });
      const iterator = proc[Symbol.asyncIterator]();
      await iterator.next();
      await container.pause();
      const error = await outcome(proc);
      expect(error).toBeInstanceOf(TransportError);
      expect(seen.starts).toBe(1);
      await container.unpause();
      await sb.close();
      await waitUntil(async () => (await markedIn(file, container, run)).length === 0, 10_000, 'nothing of the command left');
    });
  });
}
