/**
 * A host out of file descriptors or processes: every start it has no room
 * for fails with a typed `SpawnFailed` that says what ran out and what to
 * do, nothing crashes the host process (Node.js emits a failed spawn's
 * 'error' on the next tick, and a spawn out of descriptors makes no pipes),
 * and the commands already running lose nothing. A child Node.js process
 * lowers its own limits (prlimit on its pid) and runs the flood; for the
 * process limit, as root, it runs under an unused uid, since root is exempt
 * from RLIMIT_NPROC.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { asUnusedUid, limitSelfUnavailable, runJsonChild, type HostLimits } from '@sandstream/test-support/host-limits';
import { unless } from '@sandstream/test-support/skips';
import { probe } from '../src/isolation/probe.js';
import { MARKER, RUN_ID } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/exhaust-host.mjs', import.meta.url));

interface HostReport {
  readonly unavailable?: string;
  readonly completed: number;
  readonly wrong: readonly unknown[];
  readonly refused: readonly { name: string; code: string; message: string }[];
  readonly running: readonly { exact: boolean; exitCode: number | null; signal: string | null }[];
  readonly after: string;
  /** Active pipe handles before the running commands started, and once the sandbox was closed. */
  readonly pipeHandles: { readonly before: number; readonly after: number };
}

/** Runs the fixture under `limits`; resolves with its exit status, its report and what it wrote to stderr. */
async function floodUnder(
  limits: HostLimits,
  isolation: 'none' | 'namespaces',
  flood: number,
): Promise<{ code: number | null; report: HostReport | undefined; stderr: string }> {
  const argv = [process.execPath, FIXTURE, isolation, String(flood), JSON.stringify(limits)];
  const run = limits.processes === undefined ? { argv, env: {} } : asUnusedUid(argv);
  if ('skip' in run) throw new Error(run.skip);
  return runJsonChild<HostReport>(run.argv, { env: { ...process.env, ...run.env, [MARKER]: RUN_ID }, boundMs: 120_000 });
}

function expectTypedAndNothingLost(
  result: Awaited<ReturnType<typeof floodUnder>>,
  flood: number,
  ranOut: RegExp,
): void {
  // Before the fix: exit status 1 and "Unhandled 'error' event ... spawn sh EMFILE" on stderr.
  expect(result.stderr).not.toMatch(/Unhandled|uncaught|TypeError/i);
  expect(result.code).toBe(0);
  const report = result.report!;
  expect(report.wrong).toEqual([]);
  // The limit did bite: some starts were refused, and every one with the typed error.
  expect(report.refused.length).toBeGreaterThan(0);
  expect(report.completed + report.refused.length).toBe(flood);
  for (const refusal of report.refused) {
    expect(refusal).toMatchObject({ name: 'SpawnFailed', code: 'SPAWN_FAILED' });
    expect(refusal.message).toMatch(ranOut);
  }
  expect(report.running).toEqual(Array.from({ length: 3 }, () => ({ exact: true, exitCode: 3, signal: null })));
  expect(report.after).toBe('after\n');
  // Nothing of the refused starts stays open (Node.js leaves the pipes of a spawn out of descriptors).
  expect(report.pipeHandles.after).toBeLessThanOrEqual(report.pipeHandles.before);
}

const isolation = probe();
const isolationMissing = isolation instanceof Error ? isolation.message : undefined;
const asOther = asUnusedUid(['true']);
const noPrlimit = limitSelfUnavailable() ?? ('skip' in asOther ? asOther.skip : undefined);

describe('a host out of file descriptors or processes', () => {
  const tooFewFiles = /EMFILE: this process has run out of file descriptors .*raise its limit \(`ulimit -n`\) or run fewer commands at once/;
  const tooFewProcesses = /EAGAIN: no new process could be created .*`ulimit -u`.* or run fewer commands at once/;

  unless(it, noPrlimit)('plain mode, 120 starts with 100 descriptors: typed SpawnFailed, the running commands byte-exact', async () => {
    expectTypedAndNothingLost(await floodUnder({ openFiles: 100 }, 'none', 120), 120, tooFewFiles);
  });

  unless(it, noPrlimit ?? isolationMissing)("isolation 'namespaces', 120 starts with 100 descriptors: the same", async () => {
    expectTypedAndNothingLost(await floodUnder({ openFiles: 100 }, 'namespaces', 120), 120, tooFewFiles);
  });

  unless(it, noPrlimit)('plain mode, 60 starts with room for 25 more tasks: typed SpawnFailed, the running commands byte-exact', async () => {
    expectTypedAndNothingLost(await floodUnder({ processes: 25 }, 'none', 60), 60, tooFewProcesses);
  });

  unless(it, noPrlimit ?? isolationMissing)("isolation 'namespaces', 60 starts with room for 25 more tasks: the same", async (ctx) => {
    const result = await floodUnder({ processes: 25 }, 'namespaces', 60);
    // As root the flood runs under another uid, which may have no user namespaces.
    if (result.report?.unavailable !== undefined) ctx.skip(`isolation is not available to the limited uid: ${result.report.unavailable}`);
    expectTypedAndNothingLost(result, 60, /EAGAIN: .*(no new process could be created|`ulimit -u`)/);
  });
});
