/** The plan is a pure function of the seed; the generator and the statistics are exact. */
import { describe, expect, it } from 'vitest';
import { BEHAVIOURS, behavioursFor, percentile, percentiles, planDigest, planProcess, Rng } from '../src/index.js';

describe('plan', () => {
  it('is the same for the same seed and differs for another', () => {
    const caps = { binary: true, stdin: true };
    expect(planDigest(42, 300, caps)).toBe(planDigest(42, 300, caps));
    expect(planDigest(42, 300, caps)).not.toBe(planDigest(43, 300, caps));
    const a = planProcess(42, 17, caps);
    const b = planProcess(42, 17, caps);
    expect(a.command.script).toBe(b.command.script);
    expect(a.command.expected()).toEqual(b.command.expected());
  });

  it('leaves out binary output and stdin where the adapter lacks them, and plans only valid UTF-8 then', () => {
    const caps = { binary: false, stdin: false };
    expect(behavioursFor(caps)).toEqual(BEHAVIOURS.filter((b) => b !== 'binary-output' && b !== 'reads-stdin'));
    const decoder = new TextDecoder('utf-8', { fatal: true });
    for (let i = 0; i < 200; i++) {
      const plan = planProcess(5, i, { binary: false, stdin: true });
      const { stdout, stderr } = plan.command.expected();
      expect(() => decoder.decode(stdout) + decoder.decode(stderr)).not.toThrow();
      expect(plan.command.behaviour).not.toBe('binary-output');
    }
  });

  it('keeps the plans of the seeds already run (RELIABILITY.md) for targets without attach', () => {
    // Pinned from the runs recorded there: a seed of a target without attach reproduces them.
    expect(planDigest(7, 10_000, { binary: true, stdin: true })).toBe('b6ef5f472caacfb0');
    expect(planDigest(7, 10_000, { binary: false, stdin: true })).toBe('e74da3c94e229555');
    expect(planDigest(1001, 2000, { binary: false, stdin: true })).toBe('61416f21f3af86fc');
    expect(planDigest(7, 200, { binary: false, stdin: false })).toBe('7abb0b95d6487aae');
  });

  it('draws from mulberry32, not Math.random', () => {
    const rng = new Rng(1);
    expect([rng.next(), rng.next(), rng.next()].map((x) => x.toFixed(6))).toEqual(['0.627074', '0.002736', '0.527447']);
  });

  it('computes nearest-rank percentiles', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentiles([5, 1, 9, 3]).max).toBe(9);
    expect(percentiles([]).p99).toBe(0);
  });
});
