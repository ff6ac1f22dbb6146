/** The latency fixture adds its delay to every driver call, and the local adapter still conforms through it. */
import { afterAll, describe, expect, test, vi } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import type { ProcessDriver } from '@sandstream/types/runtime';
import { autoConcurrency, LOCAL_ROUND_TRIP_MS, runConformance, type SchedulePlan } from '../src/index.js';
import { Lab } from './broken/index.js';
import { latencySandbox, withLatency } from './fixtures/latency.js';

const lab = new Lab('latency');
afterAll(() => lab.cleanup());

describe('the latency-injecting wrapper', () => {
  test('every driver call reaches the real driver the injected delay later, in order', async () => {
    vi.useFakeTimers();
    try {
      const reached: string[] = [];
      const record = (name: string) => async (): Promise<never> => {
        reached.push(name);
        return undefined as never;
      };
      const driver: ProcessDriver = {
        start: record('start'),
        writeStdin: record('writeStdin'),
        closeStdin: record('closeStdin'),
        signal: record('signal'),
        pause: () => void reached.push('pause'),
        resume: () => void reached.push('resume'),
        release: record('release'),
      };
      const slow = withLatency(driver, 50);
      void slow.start({} as never);
      void slow.writeStdin(new Uint8Array(1));
      slow.pause?.();
      slow.resume?.();
      void slow.closeStdin();
      void slow.signal('SIGTERM');
      void slow.release?.();
      await vi.advanceTimersByTimeAsync(49);
      expect(reached).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(reached).toEqual(['start', 'writeStdin', 'pause', 'resume', 'closeStdin', 'signal', 'release']);
    } finally {
      vi.useRealTimers();
    }
  });

  test('the kit still passes teardown and stdin cases through it', { timeout: 120_000 }, async () => {
    const report = await runConformance({
      factory: () => latencySandbox(lab, 50),
      include: ['teardown.close', 'teardown.leader-exit', 'stdin.echo-and-eof', 'teardown.break'],
    });
    const problems = report.cases.filter((c) => c.status === 'fail' || c.status === 'error').map((c) => `${c.id}: ${c.message}`);
    expect(problems).toEqual([]);
  });

  test('by default the kit runs independent cases concurrently on the slow backend as the idle CPU allows, one at a time on the local one', { timeout: 120_000 }, async () => {
    const include = ['result.exit-codes', 'result.streamed-flag', 'bytes.final-line', 'wait.idempotent', 'environment.env', 'environment.cwd'];
    const mostAtOnce = async (factory: () => Sandbox): Promise<{ most: number; plan: SchedulePlan }> => {
      let running = 0;
      let most = 0;
      let plan: SchedulePlan | undefined;
      await runConformance({
        factory,
        include,
        onSchedule: (chosen) => (plan = chosen),
        onCaseStart: () => (most = Math.max(most, ++running)),
        onCaseEnd: (result) => void (result.status !== 'disabled' && running--),
      });
      return { most, plan: plan! };
    };
    const local = await mostAtOnce(() => lab.local());
    expect(local.most).toBe(1);
    expect(local.plan.reason).toMatch(/: a local backend\)$/);
    // 50 ms per driver call costs this machine almost no CPU: the plan runs several cases at once
    // unless the machine had no spare core while it measured (a loaded CI run), and the run honours it.
    const slow = await mostAtOnce(() => latencySandbox(lab, 50));
    const { roundTripMs, cpu } = slow.plan.measured ?? {};
    expect(roundTripMs, slow.plan.reason).toBeGreaterThanOrEqual(LOCAL_ROUND_TRIP_MS);
    expect(slow.plan.concurrency, slow.plan.reason).toBe(autoConcurrency(roundTripMs, cpu));
    // Commands that cost this machine little, with a core to spare: several at once.
    if (cpu === undefined || (cpu.idleCores >= 1 && cpu.commandCores < 0.5)) expect(slow.plan.concurrency, slow.plan.reason).toBeGreaterThan(1);
    expect(slow.most, slow.plan.reason).toBe(slow.plan.concurrency);
  });

  test('on the local backend, by default, cases that only wait overlap the others; under concurrency 1 nothing overlaps', { timeout: 120_000 }, async () => {
    // Two that wait out the grace period, two that watch a heartbeat stop, two that do neither.
    const include = ['teardown.leader-exit', 'termination.settings', 'teardown.break', 'teardown.dispose', 'result.exit-codes', 'environment.env'];
    const run = async (concurrency: 1 | 'auto'): Promise<{ most: number; problems: string[] }> => {
      let running = 0;
      let most = 0;
      const report = await runConformance({
        factory: () => lab.local(),
        include,
        concurrency,
        onCaseStart: () => (most = Math.max(most, ++running)),
        onCaseEnd: (result) => void (result.status !== 'disabled' && running--),
      });
      return { most, problems: report.cases.filter((c) => c.status !== 'pass' && c.status !== 'disabled').map((c) => `${c.id}: ${c.message}`) };
    };
    const auto = await run('auto');
    expect(auto.problems).toEqual([]);
    expect(auto.most).toBeGreaterThanOrEqual(4);
    const serial = await run(1);
    expect(serial.problems).toEqual([]);
    expect(serial.most).toBe(1);
  });
});
