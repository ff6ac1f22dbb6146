import { describe, expect, test } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { CASES, runConformance, skipReason } from '../src/index.js';

const factory = () => createLocalSandbox({ graceMs: 300 });

describe('runConformance', () => {
  test('unknown options and selectors that match nothing fail loudly', async () => {
    await expect(runConformance({ factory, only: ['x'] } as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', key: 'options.only' });
    await expect(runConformance({ factory, include: ['nope.*'] })).rejects.toMatchObject({ key: 'options.include' });
    await expect(runConformance({ factory: 'local' as never })).rejects.toMatchObject({ key: 'options.factory' });
  });

  test('selectors match by id, prefix and requirement id', async () => {
    const report = await runConformance({ factory, include: ['SS-WAIT-1', 'stream.*'], graceMs: 300 });
    const ran = report.cases.filter((c) => c.status !== 'disabled').map((c) => c.id);
    const expected = CASES.filter((c) => c.id.startsWith('stream.') || c.requirements.includes('SS-WAIT-1')).map((c) => c.id);
    expect(ran).toEqual(expected);
    expect(ran).toContain('wait.idempotent');
    expect(ran).toContain('stream.synchronous');
    expect(report.ok).toBe(true);
  });

  test('a hanging adapter fails the case at its timeout instead of hanging the run', async () => {
    const hanging = async () => {
      const real = await factory();
      return { ...real, capabilities: real.capabilities, run: () => new Promise<never>(() => undefined), close: () => real.close() };
    };
    const report = await runConformance({ factory: hanging as never, include: ['result.exit-codes'], caseTimeoutMs: 500 });
    const entry = report.cases.find((c) => c.id === 'result.exit-codes')!;
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/did not finish within 500 ms/);
    expect(report.ok).toBe(false);
  });

  test('a failing SHOULD-level case is reported but does not fail the run', async () => {
    const leaky = async () => {
      const real = await factory();
      // Wraps stream() so the runtime's safety net never sees the Process collected.
      const kept: unknown[] = [];
      return {
        ...real,
        capabilities: real.capabilities,
        stream: (argv: readonly string[], options?: object) => {
          const proc = real.stream(argv, options);
          kept.push(proc);
          return proc;
        },
        run: real.run.bind(real),
        close: () => real.close(),
      };
    };
    const report = await runConformance({ factory: leaky as never, include: ['teardown.garbage-collected'], caseTimeoutMs: 15_000, graceMs: 300 });
    const entry = report.cases.find((c) => c.id === 'teardown.garbage-collected')!;
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/^advisory \(SHOULD\)/);
    expect(report.ok).toBe(true);
  });

  test('skip reasons name the capability; required cases never skip', () => {
    const none = { streaming: false, stdin: false, 'resource-limits': false, user: false, 'binary-output': false };
    for (const c of CASES) {
      const reason = skipReason(c, none);
      if (c.needs === undefined || c.needs.length === 0) {
        if (c.without === undefined) expect(reason, c.id).toBeUndefined();
      } else {
        expect(reason, c.id).toMatch(new RegExp(`"${c.needs[0]}"`));
      }
    }
  });

  test('a listed case that passes is stale, not an expected failure', async () => {
    const report = await runConformance({ factory, include: ['wait.idempotent'], expectedFailures: ['wait.idempotent'], graceMs: 300 });
    const entry = report.cases.find((c) => c.id === 'wait.idempotent')!;
    expect(entry.status).toBe('pass');
    expect(entry.expectedFailure).toBe(false);
    expect(report.summary.staleExpectedFailures).toEqual(['wait.idempotent']);
    expect(report.ok).toBe(false);
  });

  test('a case\'s own longer limit wins over a shorter run-wide limit', async () => {
    const report = await runConformance({ factory, include: ['wait.drains-unread'], caseTimeoutMs: 1 });
    expect(report.cases.find((c) => c.id === 'wait.drains-unread')?.status).toBe('pass');
  });
});
