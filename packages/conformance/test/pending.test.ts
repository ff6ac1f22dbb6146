/**
 * A case that runs into its limit says which call into the adapter never
 * settled, and how to raise the limit from the command line and the API.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { runConformance } from '../src/index.js';
import { describePending, showArgv } from '../src/pending.js';
import { Lab } from './broken/index.js';
import { wrapSandbox } from './broken/wrap.js';
import { wrapBackground } from './broken/wrap-background.js';

const lab = new Lab('pending');
afterAll(() => lab.cleanup());

describe('a case at its time limit', () => {
  test('names the call that never settled and both ways to raise the limit', { timeout: 60_000 }, async () => {
    // wait() never settles, and the Process never reports the command exited: only the limit ends the case.
    const factory = () => wrapSandbox(lab.local(), { process: { wait: () => new Promise(() => undefined), exited: () => false } });
    const report = await runConformance({ factory, include: ['result.exit-codes'], caseTimeoutMs: 1_500, concurrency: 1 });
    const entry = report.cases.find((c) => c.id === 'result.exit-codes')!;
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/^did not finish within 1500 ms: wait\(\) of stream\(\["sh","-c","exit 0"\]\) did not settle \(called \d+\.\d s before\)/);
    expect(entry.message).toContain('--case-timeout <ms> on the command line, caseTimeoutMs in the API');
  });

  test('names a commands() that never settled', { timeout: 60_000 }, async () => {
    const factory = () => wrapBackground(lab.local(), { commands: () => new Promise(() => undefined) });
    const report = await runConformance({ factory, include: ['background.listed'], caseTimeoutMs: 1_500, concurrency: 1 });
    const entry = report.cases.find((c) => c.id === 'background.listed')!;
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/^did not finish within 1500 ms: commands\(\) did not settle \(called \d+\.\d s before\)/);
  });

  test('names an attach() that never settled, by the id it was given', { timeout: 60_000 }, async () => {
    const factory = () => wrapBackground(lab.local(), { attach: () => new Promise(() => undefined) });
    const report = await runConformance({ factory, include: ['attach.follow'], caseTimeoutMs: 1_500, concurrency: 1 });
    const entry = report.cases.find((c) => c.id === 'attach.follow')!;
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/^did not finish within 1500 ms: attach\("[^"]+"\) did not settle \(called \d+\.\d s before\)/);
  });

  test('names the bounded wait the case was in when its limit came first', { timeout: 60_000 }, async () => {
    // The command never writes its first burst, so attach.ended polls for it on a bound of at least 20 s.
    const factory = () => wrapBackground(lab.local(), { background: (inner, _argv, options) => inner.stream(['sleep', '60'], { ...options, background: true }) });
    const report = await runConformance({ factory, include: ['attach.ended'], caseTimeoutMs: 1_500, concurrency: 1 });
    const entry = report.cases.find((c) => c.id === 'attach.ended')!;
    expect(entry.status).toBe('fail');
    // Its polls keep settling: on a machine without a spare core (a loaded CI run) it is run again alone first (ADR-0051).
    expect(entry.message).toMatch(/^(run again alone within \d+ ms: )?did not finish within \d+ ms: .*; the case was in a wait begun \d+\.\d s before, bounded at \d+ ms, that fails with "the background command never finished burst 1 /);
  });

  test('a wait() still pending after the Process reported the exit fails at once, not at the limit', { timeout: 60_000 }, async () => {
    const factory = () => wrapSandbox(lab.local(), { process: { wait: () => new Promise(() => undefined) } });
    const report = await runConformance({ factory, include: ['result.exit-codes'], caseTimeoutMs: 20_000, concurrency: 1 });
    const entry = report.cases.find((c) => c.id === 'result.exit-codes')!;
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/^wait\(\) of stream\(\["sh","-c","exit 0"\]\) did not settle, though the Process reported the command exited \(exited: true\) \d+ ms before/);
  });
});

describe('describePending', () => {
  test('lists the oldest calls first, at most three, and says when none was pending', () => {
    const calls = ['a()', 'b()', 'c()', 'd()', 'e()'].map((call, i) => ({ call, since: 1_000 + i * 1_000 }));
    expect(describePending(calls, 6_000)).toBe(
      'a() did not settle (called 5.0 s before); b() did not settle (called 4.0 s before); c() did not settle (called 3.0 s before), and 2 more calls',
    );
    expect(describePending([], 0)).toMatch(/^no call to the adapter was pending/);
    const waits = [{ what: 'the marker never appeared', withinMs: 20_000, since: 2_000 }];
    expect(describePending([], 6_000, waits)).toMatch(/^no call to the adapter was pending .*; the case was in a wait begun 4\.0 s before, bounded at 20000 ms, that fails with "the marker never appeared"$/);
    expect(describePending(calls.slice(0, 1), 6_000, waits)).toBe('a() did not settle (called 5.0 s before); the case was in a wait begun 4.0 s before, bounded at 20000 ms, that fails with "the marker never appeared"');
  });

  test('shows an argv with long arguments cut', () => {
    expect(showArgv(['sh', '-c', 'x'.repeat(100)])).toBe(`["sh","-c","${'x'.repeat(37)}..."]`);
  });
});
