/** When a case that only waits frees its slot (stall.ts), judged on fed CPU samples: no timing involved. */
import { describe, expect, test } from 'vitest';
import type { CpuSample } from '../src/machine-cpu.js';
import { IdleWindow, QUIET_STALL_MS, SPARE_FOR_STALL, STALL_MS, stallBounds, stallJudge } from '../src/stall.js';

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
    const judge = stallJudge(bounds, () => true, new IdleWindow(machine(0)));
    expect(judge(999)).toBe(false);
    expect(judge(1_000)).toBe(true);
  });

  test('once the verdict is known, a case that has run for the first bound frees the slot while the machine has a core to spare, though its calls settle', () => {
    const spare = stallJudge(bounds, () => true, new IdleWindow(machine(SPARE_FOR_STALL + 0.5)));
    // Not stalled at all (a call settled just now): the first look has no second of measurement yet.
    expect(spare(0, 1_000)).toBe(false);
    expect(spare(0, 999)).toBe(false);
    expect(spare(0, 2_000)).toBe(true);
    const busy = stallJudge(bounds, () => true, new IdleWindow(machine(SPARE_FOR_STALL - 0.1)));
    for (const running of [1_000, 2_000, 10_000]) expect(busy(0, running)).toBe(false);
    // Stalled, it frees the slot whatever the machine does, as before.
    expect(busy(1_000, 10_000)).toBe(true);
  });

  test('before it, only a long stall on a machine with a core to spare', () => {
    const spare = stallJudge(bounds, () => false, new IdleWindow(machine(SPARE_FOR_STALL + 0.5)));
    expect(spare(1_000)).toBe(false);
    expect(spare(4_999)).toBe(false);
    expect(spare(5_000)).toBe(true);
    const busy = stallJudge(bounds, () => false, new IdleWindow(machine(SPARE_FOR_STALL - 0.1)));
    for (const stalled of [1_000, 5_000, 10_000, 60_000]) expect(busy(stalled)).toBe(false);
  });

  test('before it, not on the first look: the idle cores are measured over a second first', () => {
    const judge = stallJudge(bounds, () => false, new IdleWindow(machine(2, 250)));
    // 250 ms between samples: the first two looks have no second of measurement yet.
    expect(judge(6_000)).toBe(false);
    expect(judge(6_250)).toBe(false);
    expect(judge(6_500)).toBe(false);
    expect(judge(6_750)).toBe(false);
    expect(judge(7_000)).toBe(true);
  });

  test('without CPU counters, only a known verdict frees a slot', () => {
    const judge = stallJudge(bounds, () => false, new IdleWindow(() => undefined));
    expect(judge(60_000)).toBe(false);
  });

  test("one window for the run: a case's first look knows the machine's last second from the looks of the cases before it", () => {
    const idle = new IdleWindow(machine(SPARE_FOR_STALL + 0.5, 250));
    const earlier = stallJudge(bounds, () => true, idle);
    for (let look = 0; look < 4; look++) expect(earlier(0, 500)).toBe(false);
    const later = stallJudge(bounds, () => true, idle);
    expect(later(0, 1_000)).toBe(true);
  });
});

describe('IdleWindow', () => {
  test('the idle cores since the newest sample a second old; none before a second has passed, or after nobody looked for two', () => {
    let at = 0;
    let idleMs = 0;
    const window = new IdleWindow(() => ({ at, idleMs, busyMs: 2 * at - idleMs }));
    const step = (ms: number, idle: number): void => {
      at += ms;
      idleMs += idle * ms;
    };
    expect(window.look()).toBeUndefined();
    step(500, 2);
    expect(window.look()).toBeUndefined();
    step(500, 0);
    // The second: 500 ms of two idle cores, 500 ms of none.
    expect(window.look()).toBeCloseTo(1);
    step(500, 0);
    // From the newest sample a second old (at 500 ms): no idle core since.
    expect(window.look()).toBeCloseTo(0);
    step(2_500, 2);
    // The newest sample a second old is 2.5 s old: not the last second.
    expect(window.look()).toBeUndefined();
    step(1_000, 2);
    expect(window.look()).toBeCloseTo(2);
  });
});
