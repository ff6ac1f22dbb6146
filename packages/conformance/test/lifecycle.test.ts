/**
 * The adapter module's lifecycle hooks (setup, teardown) through the
 * programmatic API and the CLI; failure messages that unpack a
 * SuppressedError; termination settings read from the sandbox.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import type { Sandbox } from '@sandstream/types';
import { CASES, ConformanceFailure, HarnessError, runCase, runConformance, type ConformanceCase } from '../src/index.js';
import { describeError } from '../src/assert.js';
import { terminationOf } from '../src/termination-settings.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'sandstream-lifecycle-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

const local = (): Sandbox => createLocalSandbox({ graceMs: 300 });
const manifest = { streaming: true, stdin: true, 'resource-limits': false, user: false };

/** A SuppressedError as `await using` makes it when disposal fails while an error propagates. */
function suppressed(error: unknown, displaced: unknown): Error {
  return Object.assign(new Error('An error was suppressed during disposal.'), { name: 'SuppressedError', error, suppressed: displaced });
}

describe('hooks through runConformance', () => {
  test('setup runs before the first sandbox, teardown after the last case', async () => {
    const events: string[] = [];
    const report = await runConformance({
      factory: () => {
        events.push('factory');
        return local();
      },
      hooks: { setup: () => void events.push('setup'), teardown: () => void events.push('teardown') },
      include: ['stream.synchronous', 'result.exit-codes'],
    });
    expect(report.ok).toBe(true);
    expect(events[0]).toBe('setup');
    expect(events.at(-1)).toBe('teardown');
    expect(events.filter((e) => e === 'setup' || e === 'teardown')).toEqual(['setup', 'teardown']);
    expect(events.filter((e) => e === 'factory').length).toBeGreaterThanOrEqual(3);
  });

  test('a setup that throws makes every selected case a harness error naming it; teardown still runs', async () => {
    const events: string[] = [];
    const report = await runConformance({
      factory: local,
      hooks: {
        setup: () => {
          throw new Error('the daemon did not start');
        },
        teardown: () => void events.push('teardown'),
      },
      include: ['stream.synchronous'],
    });
    const entry = report.cases.find((c) => c.id === 'stream.synchronous')!;
    expect(entry.status).toBe('error');
    expect(entry.message).toMatch(/setup hook failed: Error: the daemon did not start/);
    expect(events).toEqual(['teardown']);
  });

  test('a teardown that throws rejects with a HarnessError that still carries the report', async () => {
    const error = await runConformance({
      factory: local,
      hooks: {
        teardown: () => {
          throw new Error('the connection did not close');
        },
      },
      include: ['stream.synchronous'],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HarnessError);
    expect((error as Error).message).toMatch(/teardown hook failed: Error: the connection did not close/);
    expect((error as { report?: { cases: unknown[] } }).report?.cases.length).toBe(CASES.length);
  });

  test('an unknown hook or a hook that is not a function fails loudly', async () => {
    await expect(runConformance({ factory: local, hooks: { setUp: () => undefined } as never })).rejects.toMatchObject({ key: 'options.hooks.setUp' });
    await expect(runConformance({ factory: local, hooks: { teardown: 'yes' } as never })).rejects.toMatchObject({ key: 'options.hooks.teardown' });
    await expect(runConformance({ factory: local, only: ['stream.*'] } as never)).rejects.toThrow(/renamed to `include`/);
  });
});

describe('hooks through the CLI', () => {
  test('the module\'s conformanceHooks run around the cases', async () => {
    const log = join(scratch, 'hooks.log');
    const out = await cli([fixture('hooks-recorder.mjs'), '--include', 'stream.synchronous', '--reporter', 'tap'], { SANDSTREAM_HOOKS_LOG: log });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines[0]).toBe('setup');
    expect(lines.at(-1)).toBe('teardown');
    expect(lines.slice(1, -1).every((l) => l === 'factory')).toBe(true);
  });

  test('a failing teardown hook still prints the report, then exits 2 naming the hook', async () => {
    const log = join(scratch, 'hooks-fail.log');
    const out = await cli([fixture('hooks-recorder.mjs'), '--include', 'stream.synchronous', '--reporter', 'tap'], {
      SANDSTREAM_HOOKS_LOG: log,
      SANDSTREAM_HOOKS_FAIL: 'teardown',
    });
    expect(out.code).toBe(2);
    expect(out.stdout).toMatch(/^ok \d+ stream\.synchronous/m);
    expect(out.stderr).toMatch(/teardown hook failed: Error: the connection did not close/);
  });
});

describe('failure messages', () => {
  test('a SuppressedError shows both errors', () => {
    const error = suppressed(new Error('dispose failed'), new ConformanceFailure('the output was wrong'));
    expect(describeError(error)).toBe('ConformanceFailure: the output was wrong; then, while disposing, Error: dispose failed');
  });

  test('a case whose check fails inside `await using` while disposal also fails reports both', async () => {
    const testCase: ConformanceCase = {
      id: 'lifecycle.suppressed',
      title: 'a check fails, then disposal fails',
      requirements: ['SS-TEAR-1'],
      async run() {
        throw suppressed(Object.assign(new Error('the backend refused SIGTERM'), { name: 'TransportError', code: 'TRANSPORT' }), new ConformanceFailure('the leader survived'));
      },
    };
    const outcome = await runCase({ testCase, manifest, factory: local, timeoutMs: 10_000 });
    expect(outcome.status).toBe('fail');
    expect(outcome.message).toBe('the leader survived; then, while disposing, unexpected TransportError [TRANSPORT]: the backend refused SIGTERM');
  });

  test('it is a harness error only when every error inside is the harness\'s', async () => {
    const testCase: ConformanceCase = {
      id: 'lifecycle.harness',
      title: 'both errors are the harness\'s',
      requirements: ['SS-TEAR-1'],
      async run() {
        throw suppressed(new HarnessError('no mktemp'), new HarnessError('no sed'));
      },
    };
    const outcome = await runCase({ testCase, manifest, factory: local, timeoutMs: 10_000 });
    expect(outcome.status).toBe('error');
    expect(outcome.message).toBe('no sed; then, while disposing, no mktemp');
  });
});

describe('termination settings', () => {
  const stating = (termination: unknown): Sandbox => Object.assign(Object.create(null) as object, { termination }) as Sandbox;

  test('the sandbox\'s own statement wins; the option only fills in for a sandbox without one', () => {
    expect(terminationOf(stating({ graceMs: 300, killWaitMs: 1_000 }), { label: 'x' })).toEqual({ graceMs: 300, killWaitMs: 1_000, source: "the sandbox's `termination`" });
    expect(terminationOf(stating(undefined), { graceMs: 700, label: '--grace-ms' })).toMatchObject({ graceMs: 700, killWaitMs: 5_000, source: expect.stringMatching(/^--grace-ms; /) });
    expect(terminationOf(stating(undefined), { label: 'x' })).toMatchObject({ graceMs: 2_000, killWaitMs: 5_000, source: expect.stringMatching(/spec's defaults/) });
    expect(() => terminationOf(stating({ graceMs: 300, killWaitMs: 1_000 }), { graceMs: 2_000, label: '--grace-ms' })).toThrow(/--grace-ms says 2000 ms but the sandbox's `termination` states a grace period of 300 ms/);
    expect(() => terminationOf(stating({ graceMs: -1, killWaitMs: 1_000 }), { label: 'x' })).toThrow(/malformed/);
    // Spec 1.4: the bound of owner loss is kept where stated as a duration; owner.bound-stated judges any other statement.
    expect(terminationOf(stating({ graceMs: 300, killWaitMs: 1_000, ownerLossMs: 1_300 }), { label: 'x' })).toMatchObject({ ownerLossMs: 1_300 });
    expect(terminationOf(stating({ graceMs: 300, killWaitMs: 1_000, ownerLossMs: 'soon' }), { label: 'x' })).not.toHaveProperty('ownerLossMs');
  });

  test('a case measures against the grace period the sandbox states, with no option given', async () => {
    let seen: unknown;
    const testCase: ConformanceCase = {
      id: 'lifecycle.termination',
      title: 'reads the termination settings',
      requirements: ['SS-TEAR-7'],
      async run(ctx) {
        seen = { graceMs: ctx.graceMs, killWaitMs: ctx.killWaitMs, source: ctx.termination.source };
      },
    };
    const outcome = await runCase({ testCase, manifest, factory: local, timeoutMs: 10_000 });
    expect(outcome.status).toBe('pass');
    expect(seen).toEqual({ graceMs: 300, killWaitMs: 5_000, source: "the sandbox's `termination`" });
  });

  test('an adapter with a 300 ms grace period passes the grace-period cases with no flag', { timeout: 60_000 }, async () => {
    // Without the sandbox's statement the kit would assume the spec's 2000 ms and call the kill at 300 ms premature.
    const sandbox = local();
    expect((sandbox as { termination?: unknown }).termination).toEqual({ graceMs: 300, killWaitMs: 5_000, ownerLossMs: 1_300 });
    await sandbox.close();
    const out = await cli([fixture('local-fast.mjs'), '--include', 'teardown.sigkill-after-grace,teardown.leader-exit', '--reporter', 'tap']);
    expect(out.stdout).toMatch(/^ok \d+ teardown\.sigkill-after-grace/m);
    expect(out.code).toBe(0);
  });

  test('a grace-period failure names the setting the kit used and where it came from', { timeout: 60_000 }, async () => {
    // The sandbox claims 3000 ms but kills after 300: the case fails and says what it measured against.
    const lying = (): Sandbox => Object.assign(local(), { termination: { graceMs: 3_000, killWaitMs: 5_000 } });
    const report = await runConformance({ factory: lying, include: ['teardown.sigkill-after-grace'] });
    const entry = report.cases.find((c) => c.id === 'teardown.sigkill-after-grace')!;
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/grace period 3000 ms, kill wait 5000 ms \(from the sandbox's `termination`\)/);
  });
});
