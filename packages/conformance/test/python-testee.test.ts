/**
 * The kit checks an adapter in another language (ADR-0038): the Python
 * adapter of python/, served by its testee (python/testee.py), passes every
 * case but those its manifest honestly rules out and the one no testee can
 * run; and each broken Python testee (python/broken: the adapter with exactly
 * one defect) fails the case meant to catch it, for that case's reason, while
 * the cases beside it still pass.
 *
 * Every testee runs with a marker variable its commands inherit, so what a
 * broken one leaves running is found by /proc and killed by pid, and the real
 * one is shown to leave nothing. Last, the fuzzing of argv, env, cwd and
 * options every adapter runs goes through the testee too.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, test } from 'vitest';
import { describeOptionFuzz } from '@sandstream/test-support/option-fuzz';
import { killEach, markedProcesses } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import type { ConformanceReport } from '@sandstream/types';
import { runConformance } from '../src/index.js';
import { CANNOT_CROSS, connectTestee, type ConnectedTestee } from '../src/testee/connect.js';
import type { TesteeCommand } from '../src/testee/link.js';

const PYTHON_DIR = fileURLToPath(new URL('../../../python/', import.meta.url));
const MARKER = 'SANDSTREAM_PYTHON_TESTEE';

/** Why the Python tests cannot run here, or undefined when python3 is 3.11 or later. */
function pythonMissing(): string | undefined {
  let version: string;
  try {
    version = execFileSync('python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).trim();
  } catch {
    return 'no python3 on PATH (the Python adapter needs Python 3.11 or later)';
  }
  const [major, minor] = version.split('.').map(Number);
  return major === 3 && minor! >= 11 ? undefined : `python3 is ${version}; the Python adapter needs 3.11 or later`;
}
const NO_PYTHON = pythonMissing();

/** One case at a time: the verdicts must not depend on the machine's load. */
const SERIAL = 1;

/** A whole-kit run takes about 7 s alone, several times that beside other suites. */
const TEST_TIMEOUT_MS = 110_000;

/**
 * Runs the kit against `args` (a script under python/ and its arguments) and
 * returns its report with the marked processes it left running, killed.
 */
async function runTestee(args: readonly string[], include?: readonly string[]): Promise<{ report: ConformanceReport; survivors: string[] }> {
  const marker = randomUUID();
  const testee: TesteeCommand = {
    command: 'python3',
    args,
    cwd: PYTHON_DIR,
    env: { ...(process.env as Record<string, string>), [MARKER]: marker },
    // A broken testee's asyncio logs what its defect causes; the real one's would be news.
    forwardStderr: include === undefined,
  };
  try {
    const report = await runConformance({ testee, concurrency: SERIAL, caseTimeoutMs: 20_000, ...(include === undefined ? {} : { include }) });
    const left = markedProcesses(MARKER, marker);
    return { report, survivors: left.map((p) => `pid ${p.pid}: ${p.cmdline}`) };
  } finally {
    killEach(markedProcesses(MARKER, marker), 'SIGKILL');
  }
}

function listed(report: ConformanceReport, ids?: readonly string[]): string {
  return report.cases
    .filter((c) => ids === undefined || ids.includes(c.id))
    .map((c) => `${c.id}: ${c.status}${c.message === undefined ? '' : ` ${c.message}`}`)
    .join('\n');
}

unless(describe, NO_PYTHON)('the Python adapter through its testee', () => {
  test('passes every case but those its manifest rules out, and leaves no process behind', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const { report, survivors } = await runTestee(['testee.py']);
    expect(survivors, 'processes the Python adapter left running').toEqual([]);
    const problems = report.cases.filter((c) => c.status !== 'pass' && c.status !== 'skipped');
    expect(problems.map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.summary.fail).toBe(0);
    expect(report.summary.error).toBe(0);
    expect(report.adapter.name).toBe('python-local');
    // A skip is a capability the adapter does not declare, or the case no testee can run; never silence.
    for (const skipped of report.cases.filter((c) => c.status === 'skipped')) {
      const reason = CANNOT_CROSS[skipped.id] === undefined ? /advertise/ : /not through a testee/;
      expect(skipped.message, `${skipped.id} is skipped for ${skipped.message}`).toMatch(reason);
    }
    expect(report.summary.pass, listed(report)).toBeGreaterThanOrEqual(60);
  });
});

/** A broken Python testee, the cases that must catch it (and why), and cases that must still pass. */
interface BrokenTestee {
  readonly defect: string;
  readonly caughtBy: Readonly<Record<string, RegExp>>;
  readonly stillPasses: readonly string[];
}

const BROKEN: readonly BrokenTestee[] = [
  {
    defect: 'leader-only-kill',
    caughtBy: {
      'teardown.dispose': /disposal at `await using` scope exit rejected with TransportError.*; still running: pid \d+ \(a child of the command/,
      'teardown.leader-exit': /run\(\) after the command exited by itself rejected with TransportError.*; still running: pid \d+ \(a background child/,
    },
    stillPasses: ['teardown.sigterm-first', 'result.exit-codes'],
  },
  {
    defect: 'dropped-last-chunk',
    caughtBy: { 'bytes.final-line': /streamed stdout: got '', expected 'first\\nno newline'/ },
    stillPasses: ['result.exit-codes', 'start.spawn-failed', 'capabilities.manifest'],
  },
  {
    defect: 'exit-status-for-signal',
    caughtBy: { 'result.exit-codes': /death by SIGKILL reported as 137\/null/ },
    stillPasses: ['teardown.dispose', 'teardown.sigterm-first'],
  },
  {
    defect: 'late-capability-error',
    caughtBy: { 'capabilities.absent-attach': /stream\(\) with background: true: the command ran although the capability error was raised/ },
    stillPasses: ['capabilities.manifest', 'stream.tagged-chunks'],
  },
];

unless(describe, NO_PYTHON)('a broken Python testee is caught', () => {
  test.for(BROKEN)('$defect', { timeout: TEST_TIMEOUT_MS }, async (broken, { expect }) => {
    const caught = Object.keys(broken.caughtBy);
    const include = [...caught, ...broken.stillPasses];
    const { report } = await runTestee(['broken/testee.py', broken.defect], include);
    const statuses = Object.fromEntries(report.cases.filter((c) => include.includes(c.id)).map((c) => [c.id, c.status]));
    const expected = Object.fromEntries([...caught.map((id) => [id, 'fail']), ...broken.stillPasses.map((id) => [id, 'pass'])]);
    expect(statuses, listed(report, include)).toEqual(expected);
    for (const [id, pattern] of Object.entries(broken.caughtBy)) {
      expect(report.cases.find((c) => c.id === id)?.message, `why ${id} failed`).toMatch(pattern);
    }
    expect(report.ok).toBe(false);
    expect(report.summary.error).toBe(0);
  });
});

/**
 * The testee of the fuzz: the real one, whose sandboxes give their commands a
 * marker the testee itself does not carry (the suite counts every marked
 * process as one the call left behind).
 */
const FUZZ_MARKER = 'SANDSTREAM_PYTHON_FUZZ';
const FUZZ_RUN = randomUUID();
const FUZZ_TESTEE = [
  'import os, sys',
  'from sandstream import create_local_sandbox',
  'from sandstream_testee import serve_stdio',
  `env = {**os.environ, "${FUZZ_MARKER}": os.environ.pop("${FUZZ_MARKER}_COMMANDS")}`,
  'sys.exit(serve_stdio(lambda: create_local_sandbox(env=env)))',
].join('\n');
let fuzzed: Promise<ConnectedTestee> | undefined;
afterAll(async () => {
  await (await fuzzed?.catch(() => undefined))?.link.close();
  killEach(markedProcesses(FUZZ_MARKER, FUZZ_RUN), 'SIGKILL');
});

if (NO_PYTHON === undefined) {
  describeOptionFuzz(
    'the Python adapter through its testee',
    async () => {
      fuzzed ??= connectTestee({
        command: 'python3',
        args: ['-c', FUZZ_TESTEE],
        cwd: PYTHON_DIR,
        env: { ...(process.env as Record<string, string>), [`${FUZZ_MARKER}_COMMANDS`]: FUZZ_RUN },
      });
      return (await fuzzed).factory();
    },
    { runs: 25, marker: { name: FUZZ_MARKER, value: FUZZ_RUN } },
  );
}
