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
 * one is shown to leave nothing. The lines the Python testee writes are held
 * to the protocol's JSON Schemas (spec/1.3/testee.json), and the fuzzing of
 * argv, env, cwd and options every adapter runs goes through the testee too.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, test } from 'vitest';
import { describeOptionFuzz } from '@sandstream/test-support/option-fuzz';
import { killEach, markedProcesses } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { testeeValidatorFor, type ConformanceReport } from '@sandstream/types';
import { runConformance } from '../src/index.js';
import { CANNOT_CROSS, connectTestee, type ConnectedTestee } from '../src/testee/connect.js';
import type { TesteeCommand } from '../src/testee/link.js';
import { encodeValue, type WireValue } from '../src/testee/values.js';

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
const missing = pythonMissing();
// CI installs python3 (.ci/run): there, a missing interpreter fails these tests instead of skipping them.
if (missing !== undefined && process.env['CI']) throw new Error(`${missing}, and CI must run the Python adapter's tests`);
const NO_PYTHON = missing;

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
    const report = await runConformance({
      testee,
      concurrency: SERIAL,
      caseTimeoutMs: 20_000,
      ...(include === undefined ? {} : { include }),
    });
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
    const problems = report.cases.filter((c) => c.status !== 'pass' && c.status !== 'skipped' && !(c.status === 'fail' && c.expectedFailure));
    expect(problems.map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.summary.fail).toBe(0);
    expect(report.summary.error).toBe(0);
    // Spec 1.4's owner-loss rule, through the testee: the bound stated, and a second testee crashed.
    expect(listed(report, ['owner.bound-stated', 'owner.crash'])).toBe('owner.bound-stated: pass\nowner.crash: pass');
    expect(report.adapter.name).toBe('python-local');
    // A skip is a capability the adapter does not declare, a hook a local adapter has no use for
    // (no link to cut), or the case no testee can run; never silence.
    for (const skipped of report.cases.filter((c) => c.status === 'skipped')) {
      const reason = CANNOT_CROSS[skipped.id] === undefined ? /advertise|exports no `conformanceHooks\.sever`/ : /not through a testee/;
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

/** The Python testee on a pair of pipes: requests written as the bridge writes them, every line it writes kept. */
class PythonSession {
  readonly child = spawn('python3', ['testee.py'], { cwd: PYTHON_DIR, stdio: ['pipe', 'pipe', 'inherit'] });
  readonly texts: string[] = [];
  readonly lines: Array<Record<string, unknown>> = [];
  readonly #waiters = new Map<string, (line: Record<string, unknown>) => void>();
  #next = 0;

  constructor() {
    createInterface({ input: this.child.stdout, crlfDelay: Infinity }).on('line', (text) => {
      this.texts.push(text);
      const line = JSON.parse(text) as Record<string, unknown>;
      this.lines.push(line);
      if (typeof line['id'] === 'string') this.#waiters.get(line['id'])?.(line);
    });
  }

  id(): string {
    return `r${++this.#next}`;
  }

  answer(id: string): Promise<Record<string, unknown>> {
    const earlier = this.lines.find((line) => line['id'] === id);
    return earlier !== undefined ? Promise.resolve(earlier) : new Promise((resolve) => this.#waiters.set(id, resolve));
  }

  send(op: string, params: Record<string, unknown> = {}, id = this.id()): Promise<Record<string, unknown>> {
    const answered = this.answer(id);
    this.child.stdin.write(`${JSON.stringify({ id, op, ...params })}\n`);
    return answered;
  }

  async value(op: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const answer = await this.send(op, params);
    if (answer['ok'] !== true) throw new Error(`${op} failed: ${JSON.stringify(answer)}`);
    return answer['value'];
  }
}

/** The bridge's value encoder, with callbacks and signals given ids as the bridge gives them. */
function wire(value: unknown): WireValue {
  let n = 0;
  return encodeValue(value, { fn: () => ({ id: `c${++n}`, throws: false }), signal: () => `c${++n}` });
}

unless(describe, NO_PYTHON)('the Python testee\'s own lines', () => {
  test('are those the protocol\'s schemas accept, each request answered once, callbacks before the answer they precede', { timeout: 30_000 }, async ({ expect }) => {
    const session = new PythonSession();
    const isLine = testeeValidatorFor('TesteeLine');
    const isHello = testeeValidatorFor('TesteeHello');
    const hello = await session.value('hello', { protocol: 1, spec: '1.3' });
    expect(isHello(hello), JSON.stringify(isHello.issues)).toBe(true);
    const { sandbox } = (await session.value('open')) as { sandbox: string };
    expect(await session.value('manifest', { sandbox })).toMatchObject({ streaming: true, attach: false });

    const settle = session.id();
    const options = wire({ onOutput: () => undefined, input: new Uint8Array([104, 105]) });
    expect(await session.send('run', { sandbox, argv: wire(['sh', '-c', 'cat; printf err >&2']), options, settle })).toMatchObject({ ok: true, value: { returned: true } });
    const settled = await session.answer(settle);
    expect(settled).toMatchObject({ ok: true, value: { exitCode: 0, stdout: { $bytes: 'aGk=' }, stderr: { $bytes: 'ZXJy' } } });
    const calls = session.lines.filter((line) => line['call'] === 'c1');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(session.lines.indexOf(calls.at(-1)!)).toBeLessThan(session.lines.indexOf(settled));

    const refused = session.id();
    await session.send('run', { sandbox, argv: wire(['true']), options: wire({ timeout: Number.NaN }), settle: refused });
    expect(await session.answer(refused)).toMatchObject({ ok: false, error: { name: 'InvalidArgument', code: 'INVALID_ARGUMENT', key: 'options.timeout' } });
    expect(await session.send('stream', { sandbox, argv: wire([Symbol('no argument')]), options: wire(undefined) })).toMatchObject({ ok: false, error: { key: 'argv[0]' } });

    const { process: cat } = (await session.value('stream', { sandbox, argv: wire(['cat']), options: wire({ stdin: 'pipe' }) })) as { process: string };
    expect(await session.value('stdin', { process: cat })).toEqual({ writer: true, closed: false });
    await session.value('write', { process: cat, data: wire(new TextEncoder().encode('hi\n')) });
    await session.value('end', { process: cat });
    const { iterator } = (await session.value('iterate', { process: cat })) as { iterator: string };
    expect(await session.value('next', { iterator })).toEqual({ done: false, value: { stream: 'stdout', data: { $bytes: 'aGkK' } } });
    expect(await session.value('next', { iterator })).toEqual({ done: true, value: { $undefined: true } });
    expect(await session.value('wait', { process: cat })).toMatchObject({ exitCode: 0, streamed: true });

    const { process: sleeper } = (await session.value('stream', { sandbox, argv: wire(['sleep', '30']), options: wire({ signal: new AbortController().signal }) })) as { process: string };
    await session.value('abort', { signal: 'c1', reason: wire('stop') });
    expect(await session.send('wait', { process: sleeper })).toMatchObject({ ok: false, error: { code: 'ABORTED', result: { signal: 'SIGTERM' }, cause: { thrown: 'stop' } } });
    const listed = session.id();
    await session.send('commands', { sandbox, settle: listed });
    expect(await session.answer(listed)).toMatchObject({ ok: false, error: { code: 'CAPABILITY_NOT_SUPPORTED', capability: 'attach' } });

    await session.value('close', { sandbox });
    await session.value('bye');
    const [code] = (await once(session.child, 'exit')) as [number | null];
    expect(code).toBe(0);
    for (const text of session.texts) expect(text).toMatch(/^\{.*\}$/);
    for (const line of session.lines) expect(isLine(line), `${JSON.stringify(line)}: ${JSON.stringify(isLine.issues)}`).toBe(true);
    const answered = session.lines.flatMap((line) => (typeof line['id'] === 'string' ? [line['id']] : []));
    expect(answered.length).toBe(new Set(answered).size);
  });
});
