import { afterEach, describe, expect, test, vi } from 'vitest';
import type { CaseResult, ConformanceReport } from '@sandstream/types';
import { createProgress, formatSummary, useColor } from '../src/reporters/pretty.js';
import { formatJunit } from '../src/reporters/junit.js';
import { formatTap } from '../src/reporters/tap.js';
import { CASES } from '../src/engine.js';
import { describeConformance } from '../src/vitest.js';
import { createLocalSandbox } from '@sandstream/adapter-local';

function sink(isTTY: boolean): { isTTY: boolean; text: string; write(chunk: string): boolean } {
  return {
    isTTY,
    text: '',
    write(chunk: string) {
      this.text += chunk;
      return true;
    },
  };
}

const failed: CaseResult = {
  id: 'teardown.break',
  title: 'break terminates',
  requirements: ['SS-TEAR-2'],
  status: 'fail',
  expectedFailure: false,
  durationMs: 12.5,
  message: 'control left the loop while the command still runs <&>',
};

const report: ConformanceReport = {
  specVersion: '1.0',
  kitVersion: '1.0.0',
  adapter: { name: 'demo', capabilities: { streaming: true, stdin: false, 'resource-limits': false, user: false } },
  startedAt: '2026-11-30T00:00:00.000Z',
  durationMs: 4321,
  summary: { pass: 1, fail: 1, skipped: 0, disabled: 0, error: 0, expectedFailures: 0, staleExpectedFailures: [] },
  ok: false,
  cases: [
    { id: 'stream.synchronous', title: 'break terminates', requirements: ['SS-STREAM-1'], status: 'pass', expectedFailure: false, durationMs: 3 },
    failed,
  ],
};

afterEach(() => vi.unstubAllEnvs());

describe('pretty reporter', () => {
  test('colours a terminal unless NO_COLOR is set, and never colours a pipe', () => {
    vi.stubEnv('NO_COLOR', '');
    expect(useColor({ isTTY: true })).toBe(true);
    expect(useColor({ isTTY: false })).toBe(false);
    vi.stubEnv('NO_COLOR', '1');
    expect(useColor({ isTTY: true })).toBe(false);
  });

  test('on a terminal, shows the running case and replaces it with the result', () => {
    const out = sink(true);
    const progress = createProgress(out as never, false);
    progress.start(CASES.find((c) => c.id === 'teardown.break')!);
    expect(out.text).toBe('  … teardown.break');
    progress.end(failed);
    expect(out.text).toContain('\r\u001b[2K  ✗ teardown.break 13 ms (fail)\n');
    expect(out.text).toContain('      control left the loop while the command still runs <&>\n');
  });

  test('on a terminal, with cases running concurrently, the last line names every case still running', () => {
    const out = sink(true);
    const progress = createProgress(out as never, false);
    progress.start(CASES.find((c) => c.id === 'teardown.break')!);
    progress.start(CASES.find((c) => c.id === 'stream.synchronous')!);
    expect(out.text.endsWith('\r\u001b[2K  … teardown.break, stream.synchronous')).toBe(true);
    progress.end(failed);
    expect(out.text.endsWith('  ✗ teardown.break 13 ms (fail)\n      control left the loop while the command still runs <&>\n  … stream.synchronous')).toBe(true);
  });

  test('the summary names the slowest cases', () => {
    expect(formatSummary(report, false)).toMatch(/slowest\s+teardown\.break 0\.0 s, stream\.synchronous 0\.0 s/);
    const slow = { ...report, cases: report.cases.map((c, i) => ({ ...c, durationMs: (i + 1) * 1500 })) };
    expect(formatSummary(slow, false)).toMatch(/slowest\s+teardown\.break 3\.0 s, stream\.synchronous 1\.5 s/);
  });

  test('in a pipe, prints only finished cases, without control sequences', () => {
    const out = sink(false);
    const progress = createProgress(out as never, false);
    progress.start(CASES[0]!);
    progress.end(failed);
    expect(out.text).toBe('  ✗ teardown.break 13 ms (fail)\n      control left the loop while the command still runs <&>\n');
  });

  test('the summary table gives counts, time and the verdict, coloured only on request', () => {
    const plain = formatSummary(report, false);
    expect(plain).toMatch(/adapter\s+demo \(streaming, no stdin, no resource-limits, no user\)/);
    expect(plain).toMatch(/failed\s+1/);
    expect(plain).toMatch(/time\s+4\.3 s/);
    expect(plain).toMatch(/DOES NOT CONFORM to Sandstream 1\.0/);
    expect(plain).not.toMatch(/\u001b\[/);
    expect(formatSummary(report, true)).toMatch(/\u001b\[31m/);
  });
});

describe('machine reporters', () => {
  test('JUnit escapes messages and counts failures', () => {
    const xml = formatJunit(report);
    expect(xml).toContain('failures="1"');
    expect(xml).toContain('message="control left the loop while the command still runs &lt;&amp;&gt;"');
    expect(xml).toContain('<property name="capability.stdin" value="false"/>');
  });

  test('a JUnit classname is the spec section of the case\'s first requirement, or its group for a requirement the kit does not know', () => {
    const xml = formatJunit(report);
    expect(xml).toContain('<testcase classname="9.3 Leaving a loop" name="teardown.break: ');
    const unknown: CaseResult = { ...failed, id: 'vendor.extra', requirements: ['SS-VENDOR-1'] };
    expect(formatJunit({ ...report, cases: [unknown] })).toContain('<testcase classname="vendor" name="vendor.extra: ');
  });

  test('TAP numbers every case and ends with the count line', () => {
    const tap = formatTap(report);
    expect(tap.split('\n').slice(0, 4)).toEqual(['TAP version 14', '1..2', 'ok 1 stream.synchronous - break terminates', 'not ok 2 teardown.break - break terminates']);
    expect(tap).toMatch(/^# does not conform: 1 passed, 1 failed, 0 skipped, 0 disabled, 0 errors$/m);
    const oneError = formatTap({ ...report, summary: { ...report.summary, error: 1 } });
    expect(oneError).toMatch(/^# does not conform: 1 passed, 1 failed, 0 skipped, 0 disabled, 1 error$/m);
  });
});

describe('verdicts and tolerated failures', () => {
  const conforming: ConformanceReport = {
    ...report,
    ok: true,
    summary: { ...report.summary, fail: 0, pass: 2 },
    cases: report.cases.map((c) => ({ ...c, status: 'pass' as const })),
  };

  test('CONFORMS only when no case was disabled', () => {
    expect(formatSummary(conforming, false)).toMatch(/CONFORMS to Sandstream 1\.0/);
    const partial = { ...conforming, summary: { ...conforming.summary, disabled: 1 } };
    expect(formatSummary(partial, false)).toMatch(/PASSED the 1 case that ran; with 1 disabled, this is not a conformance claim/);
    expect(formatSummary(partial, false)).not.toMatch(/CONFORMS/);
  });

  test('an advisory (SHOULD) failure is a skipped testcase in JUnit and a TODO in TAP, not a failure', () => {
    const advisory: CaseResult = {
      id: 'teardown.garbage-collected',
      title: 'gc',
      requirements: ['SS-TEAR-9'],
      status: 'fail',
      expectedFailure: false,
      durationMs: 1,
      message: 'advisory (SHOULD): kept running',
    };
    const withAdvisory: ConformanceReport = { ...conforming, summary: { ...conforming.summary, fail: 1 }, cases: [...conforming.cases, advisory] };
    const xml = formatJunit(withAdvisory);
    expect(xml).toContain('failures="0"');
    expect(xml).toContain('<skipped message="advisory (SHOULD): advisory (SHOULD): kept running"/>');
    expect(xml).not.toContain('<failure');
    expect(formatTap(withAdvisory)).toMatch(/^not ok 3 teardown\.garbage-collected - gc # TODO advisory \(SHOULD\)$/m);
  });

  test('the reporters read whether a failure blocks the run from the result (blocking, spec 1.3), and decide it only for a report that does not say', () => {
    // A MUST case, so only the result's own flag can make its failure tolerated.
    const must = (blocking: boolean | undefined): CaseResult => ({
      id: 'stream.synchronous',
      title: 'sync',
      requirements: ['SS-STREAM-1'],
      status: 'fail',
      expectedFailure: false,
      durationMs: 1,
      message: 'thenable',
      ...(blocking === undefined ? {} : { blocking }),
    });
    const withCase = (c: CaseResult): ConformanceReport => ({ ...conforming, summary: { ...conforming.summary, fail: 1 }, cases: [...conforming.cases, c] });
    expect(formatJunit(withCase(must(false)))).toContain('failures="0"');
    expect(formatTap(withCase(must(false)))).toMatch(/# TODO advisory \(SHOULD\)$/m);
    expect(formatJunit(withCase(must(true)))).toContain('failures="1"');
    expect(formatJunit(withCase(must(undefined)))).toContain('failures="1"');
    expect(formatTap(withCase(must(undefined)))).toMatch(/^not ok 3 stream\.synchronous - sync$/m);
  });
});

describe('the report says which results block the run', () => {
  test('every CaseResult states blocking: true exactly for an error or a failure neither expected nor advisory', { timeout: 120_000 }, async () => {
    const { runConformance } = await import('../src/index.js');
    const { Lab, BROKEN_ADAPTERS } = await import('./broken/index.js');
    const lab = new Lab('blocking-flag');
    const broken = (name: string) => BROKEN_ADAPTERS.find((a) => a.name === name)!;
    try {
      // An advisory (SHOULD) failure and a pass: neither blocks.
      const advisory = await runConformance({ factory: () => broken('no-gc-safety-net').create(lab), include: ['teardown.garbage-collected', 'stream.tagged-chunks'], concurrency: 1 });
      const byId = new Map(advisory.cases.map((c) => [c.id, c]));
      expect(byId.get('teardown.garbage-collected')).toMatchObject({ status: 'fail', blocking: false });
      expect(byId.get('stream.tagged-chunks')).toMatchObject({ status: 'pass', blocking: false });
      expect(advisory.cases.filter((c) => c.status === 'disabled').every((c) => c.blocking === false)).toBe(true);
      expect(advisory.ok).toBe(true);
      // A MUST failure blocks, unless it is listed as expected.
      const thenable = () => broken('thenable-process').create(lab);
      const must = await runConformance({ factory: thenable, include: ['stream.synchronous'], concurrency: 1 });
      expect(must.cases.find((c) => c.id === 'stream.synchronous')).toMatchObject({ status: 'fail', blocking: true });
      expect(must.ok).toBe(false);
      const listed = await runConformance({ factory: thenable, include: ['stream.synchronous'], expectedFailures: ['stream.synchronous'], concurrency: 1 });
      expect(listed.cases.find((c) => c.id === 'stream.synchronous')).toMatchObject({ status: 'fail', expectedFailure: true, blocking: false });
      expect(listed.ok).toBe(true);
    } finally {
      await lab.cleanup();
    }
  });
});
describe('describeConformance', () => {
  test('applies the engine\'s rules when the suite is collected', () => {
    const factory = () => createLocalSandbox();
    expect(() => describeConformance({ factory, bogus: true } as never)).toThrow(/options\.bogus: unknown option/);
    expect(() => describeConformance({ factory, include: ['no-such.*'] })).toThrow(/matches no case/);
    expect(() => describeConformance({ factory, testee: { command: 'x' } })).toThrow(/options\.testee: takes the place of factory, hooks and ownerModule/);
    expect(() => describeConformance({ testee: { command: ' ' } })).toThrow(/options\.testee\.command: must be a non-empty command line/);
  });
});

