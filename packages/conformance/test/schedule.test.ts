/** The scheduler of concurrent cases, driven by promises the test resolves: no timing involved. */
import { describe, expect, test } from 'vitest';
import { autoConcurrency, LOCAL_ROUND_TRIP_MS, REMOTE_CONCURRENCY, runScheduled } from '../src/schedule.js';

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

describe('autoConcurrency', () => {
  test('one at a time on a local backend (or an unknown one), several on a slow one', () => {
    expect(autoConcurrency(undefined)).toBe(1);
    expect(autoConcurrency(3)).toBe(1);
    expect(autoConcurrency(LOCAL_ROUND_TRIP_MS - 1)).toBe(1);
    expect(autoConcurrency(LOCAL_ROUND_TRIP_MS)).toBe(REMOTE_CONCURRENCY);
    expect(autoConcurrency(105)).toBe(REMOTE_CONCURRENCY);
  });
});
