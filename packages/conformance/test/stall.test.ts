/** When a case that only waits frees its slot (stall.ts), judged on fed CPU samples: no timing involved. */
import { describe, expect, test } from 'vitest';
import type { CpuSample } from '../src/machine-cpu.js';
import { QUIET_STALL_MS, SPARE_FOR_STALL, STALL_MS, stallBounds, stallJudge } from '../src/stall.js';

/** Samples of a 2-core machine, each `stepMs` after the last, with `idle` cores idle in between. */
function machine(idle: number, stepMs = 1_000): () => CpuSample {
  let at = 0;
  let idleMs = 0;
  let busyMs = 0;
  return () => {
    at += stepMs;
    idleMs += idle * stepMs;
    busyMs += (2 - idle) * stepMs;
    return { at, idleMs, busyMs };
  };
}

describe('stallBounds', () => {
  test('300 ms and five seconds, or three and twenty round trips of a slower backend', () => {
    expect(stallBounds(undefined)).toEqual({ afterMs: STALL_MS, quietMs: QUIET_STALL_MS });
    expect(stallBounds(3)).toEqual({ afterMs: 300, quietMs: 5_000 });
    expect(stallBounds(500)).toEqual({ afterMs: 1_500, quietMs: 10_000 });
  });
});

describe('stallJudge', () => {
  const bounds = { afterMs: 1_000, quietMs: 5_000 };

  test('once the verdict is known, the first bound of stall frees the slot, whatever the machine does', () => {
    const judge = stallJudge(bounds, () => true, machine(0));
    expect(judge(999)).toBe(false);
    expect(judge(1_000)).toBe(true);
  });

  test('once the verdict is known, a case that has run for the first bound frees the slot while the machine has a core to spare, though its calls settle', () => {
    const spare = stallJudge(bounds, () => true, machine(SPARE_FOR_STALL + 0.5));
    // Not stalled at all (a call settled just now): the first look has no second of measurement yet.
    expect(spare(0, 1_000)).toBe(false);
    expect(spare(0, 999)).toBe(false);
    expect(spare(0, 2_000)).toBe(true);
    const busy = stallJudge(bounds, () => true, machine(SPARE_FOR_STALL - 0.1));
    for (const running of [1_000, 2_000, 10_000]) expect(busy(0, running)).toBe(false);
    // Stalled, it frees the slot whatever the machine does, as before.
    expect(busy(1_000, 10_000)).toBe(true);
  });

  test('before it, only a long stall on a machine with a core to spare', () => {
    const spare = stallJudge(bounds, () => false, machine(SPARE_FOR_STALL + 0.5));
    expect(spare(1_000)).toBe(false);
    expect(spare(4_999)).toBe(false);
    expect(spare(5_000)).toBe(true);
    const busy = stallJudge(bounds, () => false, machine(SPARE_FOR_STALL - 0.1));
    for (const stalled of [1_000, 5_000, 10_000, 60_000]) expect(busy(stalled)).toBe(false);
  });

  test('before it, not on the first look: the idle cores are measured over a second first', () => {
    const judge = stallJudge(bounds, () => false, machine(2, 250));
    // 250 ms between samples: the first two looks have no second of measurement yet.
    expect(judge(6_000)).toBe(false);
    expect(judge(6_250)).toBe(false);
    expect(judge(6_500)).toBe(false);
    expect(judge(6_750)).toBe(false);
    expect(judge(7_000)).toBe(true);
  });

  test('without CPU counters, only a known verdict frees a slot', () => {
    const judge = stallJudge(bounds, () => false, () => undefined);
    expect(judge(60_000)).toBe(false);
  });
});
