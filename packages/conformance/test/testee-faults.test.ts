/**
 * A testee that misbehaves makes the run a harness error that names what
 * happened (spec 1.3 section 18.1, ADR-0038): never a hang, never a verdict.
 * The testee of test/fixtures/misbehaving-testee.mjs serves the real local
 * adapter and, after a few requests, breaks the protocol one way each.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { HarnessError, runConformance } from '../src/index.js';
import { markedProcesses } from '@sandstream/test-support/processes';

const MISBEHAVING = fileURLToPath(new URL('./fixtures/misbehaving-testee.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** A run of a few cases through the misbehaving testee, marked so its processes can be found after. */
function testee(fault: string, after = 3) {
  // Unique per run: two runs of one fault start in the same millisecond when the tests run concurrently.
  const marker = `testee-fault-${fault}-${randomUUID()}`;
  return {
    marker,
    command: { command: process.execPath, args: [MISBEHAVING], env: { ...(process.env as Record<string, string>), SANDSTREAM_TESTEE_FAULT: fault, SANDSTREAM_TESTEE_AFTER: String(after), SANDSTREAM_TESTEE_MARK: marker }, forwardStderr: false },
  };
}

async function harnessError(fault: string, after?: number, caseTimeoutMs?: number): Promise<HarnessError & { report?: unknown }> {
  const { command, marker } = testee(fault, after);
  const error = await runConformance({ testee: command, include: ['stream.*', 'result.*'], concurrency: 1, ...(caseTimeoutMs === undefined ? {} : { caseTimeoutMs }) }).then(
    (report) => {
      throw new Error(`the run ended with a report (ok: ${report.ok}) instead of a harness error`);
    },
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(HarnessError);
  // The kit ended the testee's process group: nothing it started is left.
  expect(markedProcesses('SANDSTREAM_TESTEE_MARK', marker)).toEqual([]);
  return error as HarnessError;
}

/**
 * The guard against a hang of the two silence tests. The kit's bound on a silence is scaled by
 * the round trip it measured after the hello (200 round trips, 10 s at least), then a ping gets as
 * long again: under the load of two test runs side by side that reached 90 s, and when the bound
 * rested on one ping that met a pause, a fresh clone's CI passed 300 s. It now rests on the median
 * of five. The verdict is the error's text; this only keeps a real hang from running forever.
 */
const SILENCE_GUARD_MS = 300_000;

describe('a testee that breaks the protocol is a harness error naming what it did [SS-TESTEE-2, SS-TESTEE-5]', () => {
  test.concurrent('a line that is not JSON', { timeout: 60_000 }, async () => {
    expect((await harnessError('garbage')).message).toMatch(/the testee wrote a line that is not a JSON object: "this is not JSON"/);
  });
  test.concurrent('an answer to an id the kit never sent', { timeout: 60_000 }, async () => {
    expect((await harnessError('unknown-id')).message).toMatch(/the testee answered an unknown id "never-sent"/);
  });
  test.concurrent('an error answer without an error', { timeout: 60_000 }, async () => {
    expect((await harnessError('no-error')).message).toMatch(/with ok: false and no error object/);
  });
  test.concurrent('an answer whose value has a form the protocol does not have', { timeout: 60_000 }, async () => {
    expect((await harnessError('bad-form')).message).toMatch(/the testee sent its answer to [a-z]+ with an unknown value form "\$weird"/);
  });
  test.concurrent('an exit in the middle of the run', { timeout: 60_000 }, async () => {
    expect((await harnessError('crash')).message).toMatch(/the testee exited \(exit status 3\)/);
  });
  test.concurrent('an exit before the hello is answered', { timeout: 60_000 }, async () => {
    const error = await harnessError('crash', 0);
    expect(error.message).toMatch(/the testee exited \(exit status 3\) with 1 request\(s\) unanswered \(hello\)/);
  });
  test.concurrent('silence on a synchronous request (stream)', { timeout: SILENCE_GUARD_MS }, async () => {
    expect((await harnessError('hang-sync')).message).toMatch(/the testee did not answer stream within [0-9]+ ms/);
  });
  test.concurrent('a hello never answered while pings are (a factory or setup hook that hangs)', { timeout: 60_000 }, async () => {
    const { command, marker } = testee('hang-hello');
    const error = await runConformance({ testee: command, include: ['stream.*'], caseTimeoutMs: 1_000 }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(HarnessError);
    expect((error as Error).message).toMatch(/the testee did not answer its hello within 3000 ms \(its setup hook or its factory hung\)/);
    expect(markedProcesses('SANDSTREAM_TESTEE_MARK', marker)).toEqual([]);
  });
  test.concurrent('silence with a request that waits pending, pings included', { timeout: SILENCE_GUARD_MS }, async () => {
    // The case that waits may reach its own limit first on a loaded machine: the run then goes on
    // (its sandbox's close, the next case's open), and those requests are pending too. The link's
    // bound on a silence scales with the ping's round trip (200 times it, at least 10 s), and beside
    // a second test suite every case reached the kit's default 20 s limit first, and the run ended
    // with a report: the cases get a limit past any bound this guard leaves room for.
    expect((await harnessError('hang', undefined, SILENCE_GUARD_MS - 60_000)).message).toMatch(/the testee stopped answering: no line for [0-9]+ ms, [0-9]+ request\(s\) pending \(([a-z]+, )*(next|wait)(, [a-z]+)*\), and no answer to a ping/);
  });
});

test('the CLI exits 2 with the fault on standard error, after its report', { timeout: 60_000 }, async () => {
  const { command } = testee('garbage');
  const child = spawn(process.execPath, [CLI, '--testee', `"${process.execPath}" "${MISBEHAVING}"`, '--include', 'stream.*', '--reporter', 'json'], {
    env: command.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code, stderr).toBe(2);
  expect(stderr).toMatch(/the link to the testee failed, so the report is no verdict: the testee wrote a line that is not a JSON object/);
  expect(JSON.parse(stdout).specVersion).toBeTypeOf('string');
});

test('--testee with an adapter module, or an empty command line, is a usage error', { timeout: 30_000 }, async () => {
  for (const args of [['--testee', 'x', 'some-module.js'], ['--testee', ' ']]) {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    expect(await new Promise((resolve) => child.on('exit', resolve)), stderr).toBe(2);
    expect(stderr).toMatch(/--testee (takes the place of the adapter module|needs a command line)/);
  }
});
