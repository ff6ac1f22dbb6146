/**
 * dockerd restarted mid-command, in the two modes a daemon runs in. By
 * default its shutdown stops every container (one with a restart policy
 * starts again, without the command); with `--live-restore` the containers,
 * and the processes exec'd in them, run on while the exec's stream breaks.
 * Each outcome is bounded and typed, the command is started once, and
 * nothing of it is left running; except under live restore with the daemon
 * still down when the adapter gives up: then the command runs on, the error
 * says so, and the sandbox's `close()` once the daemon answers ends it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TransportError, type ExecResult } from '@sandstream/types';
import { markedProcesses } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { ContainerGone, DockerRestarted, DockerUnreachable } from '../src/index.js';
import { SKIP, useEngine, waitUntil, type FileEngine } from './engine.js';
import { MARK, outcome, started } from './mid-command.js';

/** The adapter's request bound in the restart cases: its wait for the Engine to answer again (a restart here takes 1-3 s). */
const RESTART_REQUEST_MS = 15_000;
/** In the cases where the daemon stays down: the adapter gives up within twice this (its wait, then its kill's retries). */
const DOWN_REQUEST_MS = 2_000;

/** Starts the file's daemon again after a test that left it halted (a failed one), so the next test has one. */
function restartAfterEach(file: FileEngine): void {
  afterEach(async () => {
    if (file.engine !== undefined && !file.engine.running) await file.engine.start();
  });
}

/** Restarts the daemon under the command; resolves with the outcome and how long after the daemon answered again it came. */
async function restartedUnder(file: FileEngine, proc: Parameters<typeof outcome>[0]): Promise<{ error: unknown; afterBackMs: number }> {
  // The adapter waits for the Engine up to its request bound, then kills the tree (a helper exec, retried as long).
  const settled = outcome(proc, 2 * RESTART_REQUEST_MS + 10_000);
  const t0 = performance.now();
  await file.engine.restart();
  const back = performance.now();
  const error = await settled;
  const afterBackMs = Math.max(0, performance.now() - back);
  console.log(`dockerd restarted in ${Math.round(back - t0)} ms; the command settled ${Math.round(afterBackMs)} ms after it answered again`);
  return { error, afterBackMs };
}

/** Stops the daemon under the command and leaves it down; resolves with the outcome. */
async function haltedUnder(file: FileEngine, proc: Parameters<typeof outcome>[0]): Promise<unknown> {
  const t0 = performance.now();
  const settled = outcome(proc);
  await file.engine.halt();
  const error = await settled;
  console.log(`the command settled ${Math.round(performance.now() - t0)} ms after dockerd was sent SIGTERM, the daemon still down`);
  expect(file.engine.running).toBe(false);
  return error;
}

unless(describe, SKIP)('adapter-docker: dockerd restarted mid-command, by default (containers stop with the daemon)', () => {
  const file = useEngine();
  restartAfterEach(file);

  it('restarted: TransportError caused by ContainerGone (stopped), one start, nothing left', { timeout: 90_000 }, async () => {
    const { sb, container, seen, proc, run } = await started(file, 'restart-default', { requestTimeoutMs: RESTART_REQUEST_MS });
    const { error, afterBackMs } = await restartedUnder(file, proc);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as Error).cause).toBeInstanceOf(ContainerGone);
    expect(((error as Error).cause as ContainerGone).state).toBe('stopped');
    // Told once the Engine answers, not after the adapter's whole wait.
    expect(afterBackMs).toBeLessThan(RESTART_REQUEST_MS);
    expect((await container.inspect()).State.Running).toBe(false);
    await waitUntil(() => markedProcesses(MARK, run).length === 0, 10_000, 'nothing of the command left');
    await sb.close();
    expect(seen.starts).toBe(1);
  });

  it('still down: the death by the shutdown\'s signal, or TransportError caused by ContainerGone (stopped) or DockerUnreachable, within the bound; nothing left (the shutdown stopped the container)', { timeout: 90_000 }, async () => {
    const { sb, seen, proc, run } = await started(file, 'down-default', { requestTimeoutMs: DOWN_REQUEST_MS });
    const settled = await haltedUnder(file, proc);
    if (!(settled instanceof Error)) {
      // The shutdown's stop signalled the command while the daemon still answered, and the
      // adapter read how the command ended: a true result, not an invented one.
      const result = settled as ExecResult;
      console.log(`with the daemon going down, the command's own end: ${result.signal ?? `exit ${result.exitCode}`}`);
      expect(result.exitCode).toBeNull();
      expect(['SIGTERM', 'SIGKILL']).toContain(result.signal);
    } else {
      expect(settled).toBeInstanceOf(TransportError);
      // The daemon's shutdown stops the containers, and its API may still answer while it does: then
      // the adapter learns that the container stopped; else only that the Engine is out of reach.
      const cause = settled.cause;
      console.log(`with the daemon down, the cause: ${(cause as Error).name}`);
      if (cause instanceof ContainerGone) expect(cause.state).toBe('stopped');
      else expect(cause).toBeInstanceOf(DockerUnreachable);
    }
    await waitUntil(() => markedProcesses(MARK, run).length === 0, 10_000, 'nothing of the command left');
    await file.engine.start();
    await sb.close();
    expect(seen.starts).toBe(1);
  });
});

unless(describe, SKIP)('adapter-docker: dockerd restarted mid-command, with live restore (containers outlive the daemon)', () => {
  const file = useEngine({ liveRestore: true });
  restartAfterEach(file);

  it('restarted: TransportError caused by DockerRestarted; the tree killed once the Engine is back, before the error; one start', { timeout: 90_000 }, async () => {
    const { sb, container, seen, proc, run } = await started(file, 'restart-live', { requestTimeoutMs: RESTART_REQUEST_MS });
    const { error, afterBackMs } = await restartedUnder(file, proc);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as Error).cause).toBeInstanceOf(DockerRestarted);
    expect((error as Error).message).not.toMatch(/may still run/);
    expect(afterBackMs).toBeLessThan(RESTART_REQUEST_MS);
    // The container ran on through the restart, and runs on: only the command was ended.
    expect((await container.inspect()).State.Running).toBe(true);
    // Killed through the Engine that came back, before close(): the SIGKILL went out before the
    // error came, and lands when the kernel next runs each process.
    await waitUntil(() => markedProcesses(MARK, run).length === 0, 10_000, 'nothing of the command left');
    await sb.close();
    expect(seen.starts).toBe(1);
  });

  it('still down: TransportError caused by DockerUnreachable, saying the tree may still run; it does, until the daemon is back and the background sweeps end it', { timeout: 90_000 }, async () => {
    const { sb, container, seen, proc, run } = await started(file, 'down-live', { requestTimeoutMs: DOWN_REQUEST_MS });
    const error = await haltedUnder(file, proc);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as Error).cause).toBeInstanceOf(DockerUnreachable);
    expect((error as Error).message).toMatch(/could not be confirmed killed .* and may still run: it is swept again in the background, and closing the sandbox sweeps it by its tag/);
    // What is left, as the error says: the command runs on in the container, which the daemon's
    // absence does not stop.
    expect(markedProcesses(MARK, run).map((p) => p.cmdline)).toContain('sleep 1000');
    await file.engine.start();
    expect((await container.inspect()).State.Running).toBe(true);
    // Once the Engine answers again, the sweeps the driver left running end it, before any close()
    // (their waits grow to 5 s).
    await waitUntil(() => markedProcesses(MARK, run).length === 0, 20_000, 'nothing of the command left once the daemon is back');
    await sb.close();
    expect(seen.starts).toBe(1);
  });
});
