/** The latency fixture adds its delay to every driver call, and the local adapter still conforms through it. */
import { afterAll, describe, expect, test } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import { runConformance } from '../src/index.js';
import { Lab } from './broken/index.js';
import { latencySandbox } from './fixtures/latency.js';

const lab = new Lab('latency');
afterAll(() => lab.cleanup());

describe('the latency-injecting wrapper', () => {
  test('a trivial run() takes at least the injected delay per call it makes', async () => {
    const fast = lab.local();
    const slow = latencySandbox(lab, 50);
    // Measured, not assumed: the delay is compared with the same command without it,
    // each the median of three after a first run that warms both up.
    const time = async (sandbox: Sandbox): Promise<number> => {
      await sandbox.run(['true']);
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        await sandbox.run(['true']);
        times.push(performance.now() - started);
      }
      return times.sort((a, b) => a - b)[1]!;
    };
    const base = await time(fast);
    const delayed = await time(slow);
    // start() and release() are two calls of 50 ms each.
    expect(delayed - base).toBeGreaterThanOrEqual(95);
  });

  test('the kit still passes teardown and stdin cases through it', { timeout: 120_000 }, async () => {
    const report = await runConformance({
      factory: () => latencySandbox(lab, 50),
      include: ['teardown.close', 'teardown.sigkill-after-grace', 'stdin.echo-and-eof', 'teardown.break'],
    });
    const problems = report.cases.filter((c) => c.status === 'fail' || c.status === 'error').map((c) => `${c.id}: ${c.message}`);
    expect(problems).toEqual([]);
  });

  test('by default the kit runs independent cases concurrently on the slow backend, one at a time on the local one', { timeout: 120_000 }, async () => {
    const include = ['result.exit-codes', 'result.streamed-flag', 'bytes.final-line', 'wait.idempotent', 'environment.env', 'environment.cwd'];
    const mostAtOnce = async (factory: () => Sandbox): Promise<number> => {
      let running = 0;
      let most = 0;
      await runConformance({
        factory,
        include,
        onCaseStart: () => (most = Math.max(most, ++running)),
        onCaseEnd: (result) => void (result.status !== 'disabled' && running--),
      });
      return most;
    };
    expect(await mostAtOnce(() => lab.local())).toBe(1);
    expect(await mostAtOnce(() => latencySandbox(lab, 50))).toBeGreaterThan(1);
  });
});
