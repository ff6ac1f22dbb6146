/** The scheduler of concurrent cases, driven by promises the test resolves: no timing involved. */
import { describe, expect, test } from 'vitest';
import { CASES } from '../src/index.js';
import { aloneUnder, autoConcurrency, LOCAL_ROUND_TRIP_MS, REMOTE_CONCURRENCY, runScheduled, runsAlone, schedulePlan, SPARE_CORES, WAITS, waitsUnder } from '../src/schedule.js';

/** A task per item that records its start and waits until the test releases it. */
function gate() {
  const started: string[] = [];
  const release = new Map<string, () => void>();
  const task = (item: string): Promise<void> =>
    new Promise<void>((resolve) => {
      started.push(item);
      release.set(item, resolve);
    });
  return { started, task, release: (item: string) => release.get(item)!() };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('runScheduled', () => {
  test('runs at most `concurrency` shared items at once, in list order, then the solo ones one by one', async () => {
    const { started, task, release } = gate();
    const done = runScheduled(['a', 'solo1', 'b', 'c', 'solo2'], 2, (item) => item.startsWith('solo'), task);
    await tick();
    expect(started).toEqual(['a', 'b']);
    release('b');
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    release('a');
    await tick();
    // c still runs: no solo item may start beside it.
    expect(started).toEqual(['a', 'b', 'c']);
    release('c');
    await tick();
    expect(started).toEqual(['a', 'b', 'c', 'solo1']);
    release('solo1');
    await tick();
    expect(started).toEqual(['a', 'b', 'c', 'solo1', 'solo2']);
    release('solo2');
    await done;
  });

  test('with concurrency 1 everything runs in sequence', async () => {
    const { started, task, release } = gate();
    const done = runScheduled(['a', 'b'], 1, () => false, task);
    await tick();
    expect(started).toEqual(['a']);
    release('a');
    await tick();
    expect(started).toEqual(['a', 'b']);
    release('b');
    await done;
  });
});

describe('runScheduled with a lane of waiting items', () => {
  test('waiting items run beside the shared ones, the longest first, at most `waiting` at once; solo items still wait for all of them', async () => {
    const { started, task, release } = gate();
    const items = ['a', 'w1', 'W2', 'solo', 'b', 'w3'];
    const overlap = { waits: (item: string) => item.toLowerCase().startsWith('w'), longest: (item: string) => item === 'W2', waiting: 2 };
    const done = runScheduled(items, 1, (item) => item === 'solo', task, overlap);
    await tick();
    expect(started).toEqual(['W2', 'w1', 'a']);
    release('a');
    await tick();
    expect(started).toEqual(['W2', 'w1', 'a', 'b']);
    release('W2');
    await tick();
    expect(started).toEqual(['W2', 'w1', 'a', 'b', 'w3']);
    release('b');
    release('w1');
    await tick();
    // w3 still runs: the solo item waits for it.
    expect(started).toEqual(['W2', 'w1', 'a', 'b', 'w3']);
    release('w3');
    await tick();
    expect(started.at(-1)).toBe('solo');
    release('solo');
    await done;
  });
});

describe('schedulePlan', () => {
  const byId = (id: string) => CASES.find((c) => c.id === id)!;

  test('every case named in WAITS exists', () => {
    expect([...WAITS.keys()].filter((id) => !CASES.some((c) => c.id === id))).toEqual([]);
  });

  test("on a local backend under 'auto', waiting cases overlap, the grace-period ones included; heavy cases still run alone", () => {
    const plan = schedulePlan('auto', 3);
    expect(plan).toMatchObject({ concurrency: 1, overlapWaiting: true });
    expect(plan.reason).toMatch(/^one case at a time, with the cases that only wait beside them \(a round trip of 3 ms: a local backend\)$/);
    const grace = byId('teardown.sigkill-after-grace');
    expect(runsAlone(grace)).toBeDefined();
    expect(aloneUnder(plan, grace)).toBe(false);
    expect(waitsUnder(plan, grace)).toBe(true);
    expect(aloneUnder(plan, byId('limits.cpu'))).toBe(true);
    expect(waitsUnder(plan, byId('limits.cpu'))).toBe(false);
    expect(waitsUnder(plan, byId('result.exit-codes'))).toBe(false);
  });

  test('on a remote backend, and under an explicit concurrency, nothing changes: grace-period cases run alone, waiting cases share the pool', () => {
    for (const plan of [schedulePlan('auto', LOCAL_ROUND_TRIP_MS), schedulePlan(1, 3), schedulePlan(4, 3)]) {
      expect(plan.overlapWaiting).toBe(false);
      expect(aloneUnder(plan, byId('teardown.sigkill-after-grace'))).toBe(true);
      expect(waitsUnder(plan, byId('teardown.break'))).toBe(false);
      expect(aloneUnder(plan, byId('teardown.break'))).toBe(false);
    }
    expect(schedulePlan('auto', LOCAL_ROUND_TRIP_MS).concurrency).toBe(REMOTE_CONCURRENCY);
  });
});

describe('autoConcurrency', () => {
  test('one at a time on a local backend (or an unknown one), several on a slow one', () => {
    expect(autoConcurrency(undefined)).toBe(1);
    expect(autoConcurrency(3)).toBe(1);
    expect(autoConcurrency(LOCAL_ROUND_TRIP_MS - 1)).toBe(1);
    expect(autoConcurrency(LOCAL_ROUND_TRIP_MS)).toBe(REMOTE_CONCURRENCY);
    expect(autoConcurrency(105)).toBe(REMOTE_CONCURRENCY);
  });
});

describe('autoConcurrency with the CPU the trivial commands cost this machine', () => {
  const slow = 250;

  test('commands that cost this machine nothing (a backend elsewhere) run at the remote concurrency', () => {
    expect(autoConcurrency(slow, { commandCores: 0, idleCores: 1.9 })).toBe(REMOTE_CONCURRENCY);
    expect(autoConcurrency(slow, { commandCores: 0.1, idleCores: 1.8 })).toBe(REMOTE_CONCURRENCY);
  });

  test('commands computed here run as many times at once as the idle cores carry', () => {
    // An SSH backend on the same machine: a login shell and a supervisor per command keep most of a core busy.
    expect(autoConcurrency(slow, { commandCores: 0.8, idleCores: 1.1 })).toBe(2);
    expect(autoConcurrency(slow, { commandCores: 0.95, idleCores: 0.9 })).toBe(1);
    expect(autoConcurrency(slow, { commandCores: 0.5, idleCores: 1.4 })).toBe(3);
  });

  test('with no spare core, one at a time, whatever the commands seemed to cost (a full machine hides it)', () => {
    expect(autoConcurrency(slow, { commandCores: 0, idleCores: SPARE_CORES - 0.01 })).toBe(1);
    expect(autoConcurrency(slow, { commandCores: 0.02, idleCores: 0.1 })).toBe(1);
  });

  test('a local backend is unchanged by the measurement: one at a time, its waiting cases beside it', () => {
    expect(autoConcurrency(3, { commandCores: 0, idleCores: 2 })).toBe(1);
    expect(schedulePlan('auto', 3, { commandCores: 0, idleCores: 2 })).toMatchObject({ concurrency: 1, overlapWaiting: true });
  });

  test("the plan says what it chose and from what: a CPU-bound slow backend runs one case at a time, and its waiting cases do not overlap", () => {
    const plan = schedulePlan('auto', slow, { commandCores: 0.02, idleCores: 0.1 });
    expect(plan).toMatchObject({ concurrency: 1, overlapWaiting: false });
    expect(plan.reason).toBe('one case at a time (a round trip of 250 ms, 0.02 cores busy with the trivial commands and 0.10 idle: no spare CPU for a second case)');
    expect(schedulePlan('auto', slow, { commandCores: 0.5, idleCores: 1.4 }).reason).toMatch(/^3 cases at a time \(a round trip of 250 ms, 0.50 cores busy/);
    expect(schedulePlan(2, slow).reason).toBe('2 cases at a time, as the concurrency option says');
  });
});

/** A task per item that records its start, and lets the test end it (`finish`) or free its slot (`releases`). */
function releasingGate() {
  const started: string[] = [];
  const ends = new Map<string, () => void>();
  const frees = new Map<string, () => void>();
  const task = (item: string, release: () => void): Promise<void> =>
    new Promise<void>((resolve) => {
      started.push(item);
      ends.set(item, resolve);
      frees.set(item, release);
    });
  return { started, task, finish: ends, releases: frees };
}

describe('runScheduled with slots a task frees', () => {
  test('a task that releases its slot lets the next item start while it goes on, at most `spare` at once; its worker ends with it', async () => {
    const { started, task, finish, releases } = releasingGate();
    const done = runScheduled(['a', 'b', 'c', 'd', 'solo1', 'solo2'], 1, (item) => item.startsWith('solo'), task, undefined, { spare: () => 1, soloEarly: () => false });
    await tick();
    expect(started).toEqual(['a']);
    releases.get('a')!();
    await tick();
    expect(started).toEqual(['a', 'b']);
    // A second release while one freed slot is held: `spare` is 1.
    releases.get('b')!();
    await tick();
    expect(started).toEqual(['a', 'b']);
    // a ends: its freed slot is given back, and its worker does not take another item.
    finish.get('a')!();
    await tick();
    expect(started).toEqual(['a', 'b']);
    releases.get('b')!();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    finish.get('b')!();
    finish.get('c')!();
    await tick();
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    finish.get('d')!();
    await tick();
    // The solo items one at a time: a solo item cannot free its slot.
    expect(started).toEqual(['a', 'b', 'c', 'd', 'solo1']);
    releases.get('solo1')!();
    await tick();
    expect(started).toEqual(['a', 'b', 'c', 'd', 'solo1']);
    finish.get('solo1')!();
    await tick();
    expect(started).toEqual(['a', 'b', 'c', 'd', 'solo1', 'solo2']);
    finish.get('solo2')!();
    await done;
  });

  test('with soloEarly, the solo items start once every other item has started and each still running has freed its slot', async () => {
    const { started, task, finish, releases } = releasingGate();
    const done = runScheduled(['a', 'b', 'solo'], 2, (item) => item === 'solo', task, undefined, { spare: () => 4, soloEarly: () => true });
    await tick();
    expect(started).toEqual(['a', 'b']);
    releases.get('a')!();
    await tick();
    // b still holds its slot.
    expect(started).toEqual(['a', 'b']);
    releases.get('b')!();
    await tick();
    expect(started).toEqual(['a', 'b', 'solo']);
    let settled = false;
    void done.then(() => (settled = true));
    finish.get('solo')!();
    finish.get('b')!();
    await tick();
    // a still runs: the whole run has not settled.
    expect(settled).toBe(false);
    finish.get('a')!();
    await done;
  });

  test('without soloEarly, the solo items wait for every other item to end, and the freed slots are shared between the lanes', async () => {
    const { started, task, finish, releases } = releasingGate();
    const overlap = { waits: (item: string) => item.startsWith('w'), longest: () => false, waiting: 1 };
    const done = runScheduled(['a', 'b', 'w1', 'w2', 'solo'], 1, (item) => item === 'solo', task, overlap, { spare: () => 1, soloEarly: () => false });
    await tick();
    expect(started).toEqual(['w1', 'a']);
    releases.get('a')!();
    await tick();
    expect(started).toEqual(['w1', 'a', 'b']);
    // The one spare slot is held by a: w1 cannot free its own.
    releases.get('w1')!();
    await tick();
    expect(started).toEqual(['w1', 'a', 'b']);
    finish.get('w1')!();
    finish.get('b')!();
    await tick();
    expect(started).toEqual(['w1', 'a', 'b', 'w2']);
    finish.get('w2')!();
    await tick();
    // a still runs, though it freed its slot: the solo item waits for it.
    expect(started).toEqual(['w1', 'a', 'b', 'w2']);
    finish.get('a')!();
    await tick();
    expect(started).toEqual(['w1', 'a', 'b', 'w2', 'solo']);
    finish.get('solo')!();
    await done;
  });

  test('without spare slots a release does nothing', async () => {
    const started: string[] = [];
    const finish = new Map<string, () => void>();
    const done = runScheduled(['a', 'b'], 1, () => false, (item, release) => {
      started.push(item);
      release();
      return new Promise<void>((resolve) => finish.set(item, resolve));
    });
    await tick();
    expect(started).toEqual(['a']);
    finish.get('a')!();
    await tick();
    expect(started).toEqual(['a', 'b']);
    finish.get('b')!();
    await done;
  });
});
