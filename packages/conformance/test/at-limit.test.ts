/**
 * A case that reaches its limit while the adapter still answers is run again
 * alone within a scaled limit before its verdict; one that hung is not.
 * The slow sandbox is slow by injected latency on every driver call, not by
 * timing luck: the first run cannot finish within its limit, and the second,
 * on an unslowed sandbox, has several times what it needs.
 */
import { afterAll, describe, expect, test } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import type { ProcessDriver } from '@sandstream/types/runtime';
import { runConformance } from '../src/index.js';
import { measureSlowdown, PROGRESS_SHARE, retriedOutcome, retryFor, RETRY_SCALE, stillProgressing } from '../src/at-limit.js';
import { Lab } from './broken/index.js';
import { latencySandbox } from './fixtures/latency.js';

const lab = new Lab('at-limit');
afterAll(() => lab.cleanup());

/** A factory whose sandboxes number `which` (the probe's is the first) are `special`, every other the real local adapter. */
function onlyNth(which: readonly number[], special: () => Sandbox): { factory: () => Sandbox; made: () => number } {
  let made = 0;
  return { factory: () => (which.includes(++made) ? special() : lab.local()), made: () => made };
}

/** A driver whose start never settles: the command never begins, and nothing the case asks of it answers. */
const hanging = (driver: ProcessDriver): ProcessDriver => ({ ...driver, start: () => new Promise(() => undefined) });

describe('stillProgressing and retriedOutcome', () => {
  test('progress is a call that settled within a quarter of the limit before it', () => {
    expect(PROGRESS_SHARE).toBe(0.25);
    expect(stillProgressing({ limitMs: 20_000, lastSettledAgoMs: 5_000 })).toBe(true);
    expect(stillProgressing({ limitMs: 20_000, lastSettledAgoMs: 5_001 })).toBe(false);
    expect(stillProgressing({ limitMs: 20_000 })).toBe(false);
  });

  test('the report says the case ran twice, why, and keeps the first run\'s message', () => {
    const first = { status: 'fail' as const, durationMs: 20_000, message: 'did not finish within 20000 ms: wait() of ["sleep"] did not settle' };
    const retry = { limitMs: 40_000, why: 'with up to 3 other cases beside it' };
    const passed = retriedOutcome(first, { limitMs: 20_000, lastSettledAgoMs: 1_200 }, retry, { status: 'pass', durationMs: 9_000 });
    expect(passed).toEqual({
      status: 'pass',
      durationMs: 29_000,
      message:
        'passed when run again alone within 40000 ms; its first run, with up to 3 other cases beside it, reached its 20000 ms limit while the adapter still answered (a call into the adapter settled 1.2 s before): did not finish within 20000 ms: wait() of ["sleep"] did not settle',
    });
    const failed = retriedOutcome(first, { limitMs: 20_000, lastSettledAgoMs: 0 }, { limitMs: 40_000, why: 'alone, with 0.10 cores idle' }, { status: 'fail', durationMs: 40_000, message: 'did not finish within 40000 ms: x' });
    expect(failed.status).toBe('fail');
    expect(failed.message).toMatch(/^run again alone within 40000 ms: did not finish within 40000 ms: x; its first run, alone, with 0\.10 cores idle, reached/);
  });
});

describe('retryFor: only a case that progressed, and that something outside the adapter slowed', () => {
  const reached = { limitMs: 1_000, lastSettledAgoMs: 100 };
  const asBefore = async (): Promise<number> => 1;

  test('beside other cases: run again, within at least twice the limit', async () => {
    expect(await retryFor(reached, { beside: 2, idleCores: 1.5 }, asBefore)).toEqual({ limitMs: 2_000, why: 'with up to 2 other cases beside it' });
  });

  test('alone on a machine without a spare core: run again', async () => {
    expect(await retryFor(reached, { beside: 0, idleCores: 0.1 }, asBefore)).toEqual({ limitMs: 2_000, why: 'alone, with 0.10 cores idle' });
  });

  test('alone on a backend three times slower than before the first case: run again, within three times the limit', async () => {
    expect(await retryFor(reached, { beside: 0, idleCores: 1.5 }, async () => 3)).toEqual({ limitMs: 3_000, why: 'alone, while the backend answers 3.0 times slower than before the first case' });
  });

  test('alone, with CPU to spare and a backend as fast as before: judged on its first run', async () => {
    expect(await retryFor(reached, { beside: 0, idleCores: 1.5 }, asBefore)).toBeUndefined();
    expect(await retryFor(reached, { beside: 0, idleCores: 1.5 }, async () => 1.4)).toBeUndefined();
  });

  test('a case that stopped progressing is never run again, whatever slowed it', async () => {
    expect(await retryFor({ limitMs: 1_000, lastSettledAgoMs: 900 }, { beside: 3, idleCores: 0 }, async () => 4)).toBeUndefined();
    expect(await retryFor({ limitMs: 1_000 }, { beside: 3, idleCores: 0 }, async () => 4)).toBeUndefined();
  });
});

describe('measureSlowdown', () => {
  test('a backend no slower than the probe measured, or slower by less than 5 ms, is not slowed', { timeout: 30_000 }, async () => {
    expect(await measureSlowdown(() => lab.local(), 1_000, 5_000)).toBe(1);
    expect(await measureSlowdown(() => latencySandbox(lab, 50), undefined, 5_000)).toBe(1);
  });

  test('a backend 50 ms slower per driver call than the probe measured is slowed', { timeout: 30_000 }, async () => {
    expect(await measureSlowdown(() => latencySandbox(lab, 50), 5, 5_000)).toBeGreaterThan(10);
  });
});

describe('a case at its limit', () => {
  const LIMIT_MS = 3_000;

  test('that was still making progress while the backend was slowed is run again alone within a scaled limit, and passes', { timeout: 60_000 }, async () => {
    // Nine commands one after another, each of several driver calls 200 ms late: well over 3 s, a call settling every ~400 ms
    // (progress means one within 750 ms of the limit).
    // The backend stays slow for the fresh round trip after it (the third sandbox), and is fast again for the second run.
    const slowFirst = onlyNth([2, 3], () => latencySandbox(lab, 200));
    const report = await runConformance({ factory: slowFirst.factory, include: ['result.exit-codes'], caseTimeoutMs: LIMIT_MS, concurrency: 1 });
    const result = report.cases.find((c) => c.id === 'result.exit-codes')!;
    expect(result.status, result.message).toBe('pass');
    expect(result.message).toMatch(
      new RegExp(`^passed when run again alone within (\\d+) ms; its first run, alone, (with [\\d.]+ cores idle, )?while the backend answers [\\d.]+ times slower than before the first case, reached its ${LIMIT_MS} ms limit while the adapter still answered`),
    );
    const retryMs = Number(/within (\d+) ms/.exec(result.message!)![1]);
    expect(retryMs).toBeGreaterThanOrEqual(RETRY_SCALE.least * LIMIT_MS);
    expect(retryMs).toBeLessThanOrEqual(RETRY_SCALE.most * LIMIT_MS);
    expect(report.ok).toBe(true);
    // The probe's, the slow first run's, the fresh round trip's and the second run's.
    expect(slowFirst.made()).toBe(4);
  });

  test('a fault its first run raises after it ended is kept for its final result, not taken for a fault outside every case', { timeout: 60_000 }, async () => {
    const lateThrower = (): Sandbox => {
      const sandbox = latencySandbox(lab, 200);
      const close = async (): Promise<void> => {
        await sandbox.close();
        setTimeout(() => {
          throw new Error('raised by the first run after it ended');
        }, 5);
      };
      return new Proxy(sandbox, { get: (target, key) => (key === 'close' ? close : Reflect.get(target, key, target)) });
    };
    // The first run's sandbox throws after its close(); the one the slowdown is measured on is only slow.
    let made = 0;
    const factory = (): Sandbox => (++made === 2 ? lateThrower() : made === 3 ? latencySandbox(lab, 200) : lab.local());
    const report = await runConformance({ factory, include: ['result.exit-codes'], caseTimeoutMs: LIMIT_MS, concurrency: 1 });
    const result = report.cases.find((c) => c.id === 'result.exit-codes')!;
    expect(result.status, result.message).toBe('fail');
    expect(result.message).toMatch(/^passed when run again alone within \d+ ms; .*; then, after the case ended, the adapter raised an uncaught exception: Error: raised by the first run after it ended/);
  });

  test('that hung is judged on its first run: not run again', { timeout: 60_000 }, async () => {
    const hungFirst = onlyNth([2], () => lab.driver(hanging, { killWaitMs: 500 }));
    const report = await runConformance({ factory: hungFirst.factory, include: ['result.exit-codes'], caseTimeoutMs: LIMIT_MS, concurrency: 1 });
    const result = report.cases.find((c) => c.id === 'result.exit-codes')!;
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(new RegExp(`^did not finish within ${LIMIT_MS} ms: run\\(\\) of \\["sh","-c","exit 0"\\] did not settle`));
    expect(result.message).not.toMatch(/run again/);
    // The probe's, and the case's; the sweep after the failure may make one more, never a second run.
    expect(hungFirst.made()).toBeLessThanOrEqual(3);
  });
});

describe('a stalled case once the verdict is known', () => {
  /** The order in which cases started and ended, on an adapter whose every command hangs (the probe's sandbox works). */
  const order = async (concurrency: 1 | 'auto'): Promise<string[]> => {
    const events: string[] = [];
    const allHang = onlyNth([2, 3, 4, 5, 6, 7, 8, 9, 10], () => lab.driver(hanging, { killWaitMs: 500 }));
    await runConformance({
      factory: allHang.factory,
      include: ['result.exit-codes', 'result.streamed-flag', 'wait.idempotent'],
      caseTimeoutMs: 1_500,
      concurrency,
      onCaseStart: (c) => events.push(`start ${c.id}`),
      onCaseEnd: (r) => void (r.status !== 'disabled' && events.push(`end ${r.id}`)),
    });
    return events;
  };

  test("under 'auto', after the first case failed the run, a case that only waits lets the next start beside it", { timeout: 120_000 }, async () => {
    const events = await order('auto');
    const [first, second, third] = events.filter((e) => e.startsWith('start ')).map((e) => e.slice('start '.length));
    // The first runs alone: nothing has failed yet. The second stalls once the first failed, and the third starts beside it.
    expect(events.slice(0, 3)).toEqual([`start ${first}`, `end ${first}`, `start ${second}`]);
    expect(events.indexOf(`start ${third}`)).toBeLessThan(events.indexOf(`end ${second}`));
  });

  test('under an explicit concurrency nothing overlaps, failed or not', { timeout: 120_000 }, async () => {
    const events = await order(1);
    const ids = events.filter((e) => e.startsWith('start ')).map((e) => e.slice('start '.length));
    expect(ids).toHaveLength(3);
    expect(events).toEqual(ids.flatMap((id) => [`start ${id}`, `end ${id}`]));
  });
});
