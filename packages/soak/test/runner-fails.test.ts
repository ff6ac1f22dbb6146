/**
 * The soak is not a test that cannot fail: against a sandbox that drops a
 * chunk, leaves a process behind, never ends a stream or leaves a file in
 * the sandbox, the run reports the violation, naming the process and the seed.
 */
import { describe, expect, it } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';
import type { OutputChunk, Process, Sandbox } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { waitFor } from '@sandstream/test-support/timing';
import { MARKER, runSoak, type SoakReport } from '../src/index.js';
import { missingHere } from './missing-here.js';

/** A Process whose iterator yields what `next` makes of the real one's. */
function withIterator(proc: Process, iterate: (inner: AsyncIterator<OutputChunk, undefined>) => AsyncIterator<OutputChunk, undefined>): Process {
  return new Proxy(proc, {
    get(target, property) {
      if (property === Symbol.asyncIterator) return () => iterate(target[Symbol.asyncIterator]());
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A sandbox whose `stream()` calls go through `call`, which gets the real sandbox. */
function withStreamCall(sandbox: Sandbox, call: (argv: readonly string[], options: object | undefined, sandbox: Sandbox) => Process): Sandbox {
  return new Proxy(sandbox, {
    get(target, property) {
      if (property === 'stream') return (argv: readonly string[], options?: object) => call(argv, options, target);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A sandbox whose streams go through `wrap` once started. */
function withStream(sandbox: Sandbox, wrap: (proc: Process, sandbox: Sandbox) => Process): Sandbox {
  return withStreamCall(sandbox, (argv, options, target) => wrap(target.stream(argv, options), target));
}

function kinds(report: SoakReport): string[] {
  return [...new Set(report.violations.map((v) => v.kind))].sort();
}

describe('the soak fails', () => {
  it('when a chunk is lost: the stream read to its end is not byte-exact', async () => {
    const report = await runSoak({
      adapter: 'local',
      count: 40,
      concurrency: 5,
      seed: 11,
      // A lingering command is read until its output is complete, which with a chunk gone it never
      // is: such a process ends only by the bound (a hang, reported beside the loss).
      processBoundMs: 10_000,
      settleBoundMs: 3_000,
      decorate: (sandbox) =>
        withStream(sandbox, (proc) =>
          withIterator(proc, (inner) => {
            let n = 0;
            return {
              async next() {
                const result = await inner.next();
                // The second chunk of every stream goes missing.
                return !result.done && ++n === 2 ? inner.next() : result;
              },
              return: (value) => inner.return!(value),
            };
          }),
        ),
    });
    expect(kinds(report)).toContain('process');
    const lost = report.violations.filter((v) => /sha256 .* over \d+ bytes, the command wrote sha256/.test(v.message));
    expect(lost.length).toBeGreaterThan(0);
    expect(lost[0]!.message).toMatch(/^process \d+ \(seed 11, /);
  }, 120_000);

  it('when a process outlives the run: it is found in the process table', async () => {
    let leak: Promise<{ exitCode: number | null }> | undefined;
    const report = await runSoak({
      adapter: 'local',
      count: 10,
      concurrency: 2,
      seed: 12,
      settleBoundMs: 2_000,
      decorate: (sandbox) =>
        withStream(sandbox, (proc, inner) => {
          if (leak !== undefined) return proc;
          // Escapes the command's process group, carrying the run's marker. The shell waits until
          // the escapee has its own session (it removes the file only after setsid), since once the
          // shell exits the runtime ends what is left in its group, and a slow escapee would still
          // be there. The first stream delivers nothing until that shell has exited, so the run
          // cannot end (and close its sandboxes) before the escapee exists.
          const script = 'f=$(mktemp); setsid sh -c \'rm -f "$0"; exec sleep 600\' "$f" </dev/null >/dev/null 2>&1 & while [ -e "$f" ]; do sleep 0.01; done';
          const started = inner.run(['sh', '-c', script]);
          leak = started;
          return withIterator(proc, (iterator) => ({
            async next() {
              await started.catch(() => undefined);
              return iterator.next();
            },
            return: (value) => iterator.return!(value),
          }));
        }),
    });
    expect(leak, 'the decorated sandbox was never asked for a stream').toBeDefined();
    expect((await leak!).exitCode, 'the shell that starts the escapee').toBe(0);
    expect(kinds(report)).toContain('survivors');
    expect(report.survivors.host.some((p) => p.includes('sleep 600'))).toBe(true);
    // The runner killed what it found, so that one run cannot poison the next. SIGKILL went out;
    // on a loaded machine the process may take a moment to exit, so its end is awaited (bounded).
    await waitFor(() => markedProcesses(MARKER, report.runId).length === 0, 20_000, () => `the run's processes gone (left: ${JSON.stringify(markedProcesses(MARKER, report.runId))})`);
  }, 120_000);

  it('when a stream never ends: the process is reported as hung, with its index, the seed and the step it stopped at', async () => {
    let streams = 0;
    const report = await runSoak({
      adapter: 'local',
      count: 6,
      concurrency: 3,
      seed: 13,
      processBoundMs: 3_000,
      settleBoundMs: 2_000,
      decorate: (sandbox) =>
        withStream(sandbox, (proc) => {
          // The first stream is the run's warm-up; the second is a process of the plan.
          if (++streams !== 2) return proc;
          return withIterator(proc, (inner) => ({
            next: () => new Promise(() => undefined),
            return: (value) => inner.return!(value),
          }));
        }),
    });
    const hung = report.violations.filter((v) => v.kind === 'hang');
    expect(hung).toHaveLength(1);
    expect(hung[0]!.message).toMatch(/^process \d+ \(seed 13, .*made no progress for 3000 ms, \d+ ms after its start \(reading; 0 chunks, 0 bytes received; /);
  }, 120_000);

  unless(it, missingHere('docker'))('when a file is left in the sandbox (a container of the run\'s own): the file is named', async () => {
    let streams = 0;
    const report = await runSoak({
      adapter: 'docker',
      count: 4,
      concurrency: 2,
      seed: 13,
      settleBoundMs: 2_000,
      decorate: (sandbox) =>
        withStreamCall(sandbox, (argv, options, target) => {
          // The second stream is a process of the plan; it leaves a scratch file, as an adapter
          // that kept a FIFO per command and forgot it would.
          if (++streams === 2) void target.run(['touch', '/tmp/sandstream-left-behind']);
          return target.stream(argv, options);
        }),
    });
    const left = report.violations.filter((v) => v.kind === 'leftovers');
    expect(left).toHaveLength(1);
    expect(left[0]!.message).toContain('/tmp/sandstream-left-behind');
  }, 180_000);
});
