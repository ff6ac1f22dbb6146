// The runtime's reader of the Linux process table, against a real tree of
// processes this test starts (and ends), each part with a control that can
// fail: an exact mark that is only a prefix finds nothing, a group that is
// not the tree's holds none of it.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  descendants,
  groupMembers,
  isLiveProcess,
  isRunningState,
  listPids,
  liveProcesses,
  markedProcesses,
  parseProcStat,
  readProcArgv,
  readProcStat,
  readProcStatFields,
  readProcStatus,
  signalEach,
  someProcess,
} from '../src/runtime/index.js';

const MARK = 'SANDSTREAM_PROCESS_TABLE_TEST';
const linux = process.platform === 'linux';
if (!linux) console.warn('process-table tests skipped: /proc is Linux only');

/** Resolves once `condition()` holds, looking again every 10 ms; rejects naming `what` after `ms`. */
async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: still not true after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let tree: ChildProcess | undefined;
let mark = '';

/** A shell in a session and group of its own with two sleeping children, all three carrying the mark. */
async function startTree(): Promise<number> {
  mark = randomUUID();
  tree = spawn('sh', ['-c', 'sleep 30 & sleep 30; wait'], { detached: true, stdio: 'ignore', env: { ...process.env, [MARK]: mark } });
  // The two sleeps are forks of the shell until they exec: up means running `sleep`, not only there.
  await until(() => markedProcesses(MARK, mark).filter((p) => p.cmdline === 'sleep 30').length === 2, 10_000, 'the shell and its two sleeps');
  return tree.pid!;
}

afterEach(() => {
  signalEach(markedProcesses(MARK, mark).map((p) => p.pid));
  tree = undefined;
});

describe.runIf(linux)('process table', () => {
  it('parses a stat line whose command name holds spaces and parentheses', () => {
    const fields = ['S', '1', '40', '41', ...Array.from({ length: 15 }, () => '0'), '987654', '0'];
    expect(parseProcStat(`42 (a) b (c) ${fields.join(' ')}`)).toEqual({ state: 'S', ppid: 1, pgrp: 40, session: 41, startTicks: 987_654 });
  });

  it("reads a process's stat, argv and status; undefined for a pid that is not there", async () => {
    const pid = await startTree();
    const stat = readProcStat(pid);
    expect(stat).toMatchObject({ pid, ppid: process.pid, pgrp: pid, session: pid });
    expect(stat!.startTicks).toBeGreaterThanOrEqual(readProcStat(process.pid)!.startTicks);
    // The state is read again here, and a shell between two steps may be running or sleeping.
    const fields = readProcStatFields(pid);
    expect(fields?.[0]).toMatch(/^[RS]$/);
    expect(fields?.slice(1, 4)).toEqual([String(process.pid), String(pid), String(pid)]);
    expect(readProcArgv(pid)).toEqual(['sh', '-c', 'sleep 30 & sleep 30; wait']);
    expect(readProcStatus(process.pid)).toEqual({ realUid: process.getuid!(), threads: expect.any(Number) });
    expect(isLiveProcess(pid)).toBe(true);
    expect(listPids()).toContain(pid);
    expect(liveProcesses().map((p) => p.pid)).toContain(pid);
    // Above the kernel's pid_max (at most 2^22): never a process.
    expect(readProcStat(2 ** 23)).toBeUndefined();
    expect(readProcArgv(2 ** 23)).toBeUndefined();
    expect(isLiveProcess(2 ** 23)).toBe(false);
  });

  it('finds a tree by the mark in its environment, exactly or by prefix, with each command line', async () => {
    const pid = await startTree();
    const found = markedProcesses(MARK, mark);
    expect(found.map((p) => p.cmdline).sort()).toEqual(['sh -c sleep 30 & sleep 30; wait', 'sleep 30', 'sleep 30']);
    expect(found.every((p) => p.value === mark && p.environ.includes(`${MARK}=${mark}`))).toBe(true);
    expect(markedProcesses(MARK, mark.slice(0, 8), { prefix: true }).map((p) => p.pid).sort()).toEqual(found.map((p) => p.pid).sort());
    expect(markedProcesses(MARK, mark.slice(0, 8))).toEqual([]);
    expect(markedProcesses(MARK).map((p) => p.pid)).toContain(pid);
  });

  it("lists a group's members and a process's descendants", async () => {
    const pid = await startTree();
    const sleeps = markedProcesses(MARK, mark).filter((p) => p.pid !== pid).map((p) => p.pid);
    expect(descendants(pid).sort()).toEqual(sleeps.sort());
    expect(groupMembers(pid).sort()).toEqual([pid, ...sleeps].sort());
    expect(groupMembers(readProcStat(process.pid)!.pgrp)).not.toContain(pid);
  });

  it('tells whether a process satisfies a test, and lets the caller judge what it could not read', async () => {
    const pid = await startTree();
    const inGroup = (pgid: number) => (entry: { pgrp: number; state: string }) => entry.pgrp === pgid && isRunningState(entry.state);
    expect(someProcess(inGroup(pid))).toBe(true);
    // Above the kernel's pid_max: no group has that id.
    expect(someProcess(inGroup(2 ** 23))).toBe(false);
    // A procfs that cannot be listed: undefined by default, or the caller's answer for the failure it was given.
    const missing = `/proc/${2 ** 23}/root/proc`;
    expect(someProcess(inGroup(pid), { proc: missing })).toBeUndefined();
    const seen: unknown[] = [];
    expect(someProcess(inGroup(pid), { proc: missing, unreadable: (error) => (seen.push(error), true) })).toBe(true);
    expect((seen[0] as NodeJS.ErrnoException).code).toBe('ENOENT');
  });

  it('signals each pid, counting those that were there', async () => {
    const pid = await startTree();
    const exited = new Promise((resolve) => tree!.once('exit', resolve));
    const pids = markedProcesses(MARK, mark).map((p) => p.pid);
    expect(signalEach([...pids, 2 ** 23])).toBe(3);
    await exited;
    await until(() => markedProcesses(MARK, mark).length === 0, 10_000, 'the sleeps gone after SIGKILL');
    expect(isLiveProcess(pid)).toBe(false);
  });
});
