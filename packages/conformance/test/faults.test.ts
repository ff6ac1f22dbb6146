/**
 * Faults an adapter raises where no caller can catch them, through the
 * programmatic API: charged to the case whose work raised them, to every
 * case in flight when they carry no case, and to the run when none is in
 * flight; warnings attributed the same way. The broken adapters in
 * ./broken/faults.ts prove the cases catch each kind.
 */
import { AsyncResource } from 'node:async_hooks';
import { afterAll, describe, expect, test } from 'vitest';
import { CASES, runCase, runConformance, type HarnessError } from '../src/index.js';
import type { RunWarning } from '../src/warnings.js';
import { BROKEN_ADAPTERS, Lab } from './broken/index.js';
import { wrapSandbox } from './broken/wrap.js';

const labs: Lab[] = [];
afterAll(async () => {
  for (const lab of labs) await lab.cleanup();
});

/** Two cases that call stream() once each and may run side by side. */
const PAIR = ['stream.synchronous', 'stream.tagged-chunks'];

/**
 * A local sandbox whose Processes' disposal waits until `calls` stream()
 * calls were made (both cases of PAIR, by default), so those cases are in
 * flight; then `raise` runs once.
 */
function heldPair(raise: () => void, calls = 2) {
  const lab = new Lab('faults');
  labs.push(lab);
  let made = 0;
  let open!: () => void;
  const both = new Promise<void>((resolve) => (open = resolve));
  const factory = () =>
    wrapSandbox(lab.local(), {
      stream(inner, argv, options) {
        const proc = inner.stream(argv, options);
        if (++made === calls) {
          raise();
          setImmediate(open);
        }
        return proc;
      },
      process: { dispose: (inner) => both.then(() => inner[Symbol.asyncDispose]()) },
    });
  return factory;
}

describe('a fault is charged', () => {
  test('to the case whose work raised it, and only to it, with another case in flight', { timeout: 60_000 }, async () => {
    const factory = heldPair(() =>
      setImmediate(() => {
        throw new Error('raised by the second case');
      }),
    );
    const report = await runConformance({ factory, include: PAIR, concurrency: 2 });
    const statuses = report.cases.filter((c) => PAIR.includes(c.id)).map((c) => [c.id, c.status, c.message ?? '']);
    const failed = statuses.filter(([, status]) => status === 'fail');
    expect(failed, JSON.stringify(statuses)).toHaveLength(1);
    expect(failed[0]![2]).toMatch(/^the adapter raised an uncaught exception: Error: raised by the second case .*where no caller could catch it/);
    expect(statuses.filter(([, status]) => status === 'pass')).toHaveLength(1);
  });

  test('to every case in flight, saying so, when it carries no case', { timeout: 60_000 }, async () => {
    // Created outside every case: what it schedules carries no case's scope.
    const outside = new AsyncResource('outside-every-case');
    const factory = heldPair(() =>
      outside.runInAsyncScope(() =>
        setImmediate(() => {
          throw new Error('raised by a shared resource');
        }),
      ),
    );
    const report = await runConformance({ factory, include: PAIR, concurrency: 2 });
    for (const id of PAIR) {
      const c = report.cases.find((x) => x.id === id)!;
      expect(c.status, c.message).toBe('fail');
      expect(c.message).toMatch(/raised by a shared resource.*while 2 cases ran: stream\.synchronous, stream\.tagged-chunks; the kit cannot tell which one caused it/);
    }
  });

  test('to the one case in flight, saying it came from outside its own work, when it carries no case', { timeout: 60_000 }, async () => {
    const outside = new AsyncResource('outside-every-case');
    const factory = heldPair(
      () =>
        outside.runInAsyncScope(() =>
          setImmediate(() => {
            throw new Error('raised by a shared resource');
          }),
        ),
      1,
    );
    const report = await runConformance({ factory, include: ['stream.synchronous'] });
    const entry = report.cases.find((c) => c.id === 'stream.synchronous')!;
    expect(entry.status, entry.message).toBe('fail');
    expect(entry.message).toMatch(/raised by a shared resource .*\(raised outside the case's own work, while it was the only case running\)/);
  });

  test('to the run when no case is in flight: a HarnessError after the report, which it carries', { timeout: 60_000 }, async () => {
    const lab = new Lab('faults-probe');
    labs.push(lab);
    let first = true;
    const factory = () => {
      // The first sandbox is the kit's probe of the adapter, before any case.
      if (first) {
        first = false;
        void Promise.reject(new Error('raised during the probe'));
      }
      return lab.local();
    };
    const error = (await runConformance({ factory, include: ['stream.synchronous'] }).then(
      () => undefined,
      (e: unknown) => e,
    )) as HarnessError & { report?: { cases: Array<{ id: string; status: string }> } };
    expect(error?.name).toBe('HarnessError');
    expect(error.message).toMatch(/^the adapter raised a fault outside every case, where no caller could catch it: unhandled rejection: Error: raised during the probe .*\(from the work of the probe of the adapter, before the first case\)/);
    expect(error.report?.cases.find((c) => c.id === 'stream.synchronous')?.status).toBe('pass');
  });

  test('to the run, not to the case in flight, when the probe\'s work raises it later', { timeout: 60_000 }, async () => {
    const lab = new Lab('faults-probe-late');
    labs.push(lab);
    let raise: (() => void) | undefined;
    let first = true;
    const factory = () => {
      if (first) {
        first = false;
        // Bound to the probe's context, released by the first case's stream() call.
        raise = AsyncResource.bind(() =>
          setImmediate(() => {
            throw new Error('raised by the probe\'s sandbox, later');
          }),
        );
      }
      return wrapSandbox(lab.local(), {
        stream(inner, argv, options) {
          raise?.();
          raise = undefined;
          return inner.stream(argv, options);
        },
      });
    };
    const error = (await runConformance({ factory, include: ['stream.synchronous'] }).then(
      () => undefined,
      (e: unknown) => e,
    )) as HarnessError & { report?: { cases: Array<{ id: string; status: string; message?: string }> } };
    expect(error?.message).toMatch(/uncaught exception: Error: raised by the probe's sandbox, later .*\(from the work of the probe of the adapter, before the first case\)/);
    const entry = error.report?.cases.find((c) => c.id === 'stream.synchronous');
    expect(entry?.status, entry?.message).toBe('pass');
  });

  test('the process listeners the run displaced are back afterwards', async () => {
    const before = ['uncaughtException', 'unhandledRejection', 'warning'].map((e) => process.listenerCount(e));
    const lab = new Lab('faults-listeners');
    labs.push(lab);
    await runConformance({ factory: () => lab.local(), include: ['stream.synchronous'] });
    expect(['uncaughtException', 'unhandledRejection', 'warning'].map((e) => process.listenerCount(e))).toEqual(before);
  });
});

describe('warnings', () => {
  test('the one teardown.garbage-collected provokes is attributed to it and expected; another one is not', { timeout: 60_000 }, async () => {
    const lab = new Lab('warnings');
    labs.push(lab);
    const seen: RunWarning[] = [];
    const factory = () =>
      wrapSandbox(lab.local(), {
        stream(inner, argv, options) {
          if (argv.join(' ').includes('sleep 5')) process.emitWarning('an adapter\'s own warning', { code: 'X_ADAPTER_WARNING' });
          return inner.stream(argv, options);
        },
      });
    const report = await runConformance({ factory, include: ['teardown.garbage-collected', 'stream.synchronous'], onWarning: (w) => seen.push(w) });
    expect(report.ok).toBe(true);
    const leak = seen.filter((w) => w.warning.code === 'SANDSTREAM_PROCESS_LEAKED');
    expect(leak.length).toBeGreaterThan(0);
    expect(leak.every((w) => w.expected && w.cases.join() === 'teardown.garbage-collected')).toBe(true);
    const own = seen.filter((w) => w.warning.code === 'X_ADAPTER_WARNING');
    expect(own.map((w) => [w.cases, w.expected])).toEqual([[['stream.synchronous'], false]]);
  });
});

describe('runCase alone, as the Vitest entry runs each case', () => {
  const adapter = (name: string) => BROKEN_ADAPTERS.find((a) => a.name === name)!;
  const testCase = (id: string) => CASES.find((c) => c.id === id)!;

  test('a fault while the case runs fails it', { timeout: 60_000 }, async () => {
    const lab = new Lab('faults-run-case');
    labs.push(lab);
    const factory = () => adapter('unhandled-rejection').create(lab);
    const outcome = await runCase({ testCase: testCase('process.kill'), manifest: factory().capabilities, factory, timeoutMs: 20_000 });
    expect(outcome.status).toBe('fail');
    expect(outcome.message).toMatch(/^the adapter raised an unhandled rejection: Error: the audit log of kill\(SIGUSR1\) is unreachable/);
  });

  test('a fault after the case ended goes to the listeners the kit displaced, naming the case', { timeout: 60_000 }, async () => {
    const lab = new Lab('faults-late');
    labs.push(lab);
    const factory = () => adapter('throws-late').create(lab);
    const manifest = factory().capabilities;
    // This file's own listener stands in for Vitest's while the two cases run.
    const displaced = process.rawListeners('uncaughtException') as Array<(...args: unknown[]) => void>;
    process.removeAllListeners('uncaughtException');
    let heard!: (error: Error) => void;
    const late = new Promise<Error>((resolve) => (heard = resolve));
    process.on('uncaughtException', heard);
    try {
      const first = await runCase({ testCase: testCase('stream.synchronous'), manifest, factory, timeoutMs: 20_000 });
      expect(first.status).toBe('pass');
      // The next stream() call releases the first case's late callback.
      await runCase({ testCase: testCase('stream.tagged-chunks'), manifest, factory, timeoutMs: 20_000 });
      const error = await late;
      expect(error.message).toMatch(/^after the conformance case stream\.synchronous ended, the adapter raised an uncaught exception: Error: a disposed Process's callback ran after its case/);
      expect((error.cause as Error).message).toBe("a disposed Process's callback ran after its case");
    } finally {
      process.off('uncaughtException', heard);
      for (const listener of displaced) process.on('uncaughtException', listener);
    }
  });
});
