/**
 * The helper commands, run for real: a group number another group took
 * since is left alone (found by the soak, seed 7 on e2b, 10 000 processes:
 * a command's end waited 20 s for the group that took its number), and the
 * sweep finds by the tag what left the command's session.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ended, isLive, killEach, markedProcesses, procStat } from '@sandstream/test-support/processes';
import { waitFor, within } from '@sandstream/test-support/timing';
import { HELPER, HELPER_NAME, TAG_VARIABLE, groupSignalArgv, sweepArgv, treeKillArgv } from '../src/index.js';

const root = mkdtempSync(join(tmpdir(), 'sandstream-helpers-'));
const groups: ChildProcess[] = [];
afterAll(() => {
  // Only a group whose leader lives: the number of one that ended may be a stranger's by now.
  for (const group of groups) {
    if (group.pid === undefined || group.exitCode !== null || group.signalCode !== null) continue;
    try {
      process.kill(-group.pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
  rmSync(root, { recursive: true, force: true });
});

function run(argv: string[]): number | null {
  return spawnSync(argv[0]!, argv.slice(1), { timeout: 20_000 }).status;
}

/** A live group led by a fresh process in its own session; with `trapFile`, the leader records a SIGTERM there and lives on for a second. */
function liveGroup(options: { trapFile?: string; env?: NodeJS.ProcessEnv } = {}): { pgid: number; startTime: string; ended: Promise<NodeJS.Signals | null> } {
  const script = options.trapFile === undefined ? 'sleep 30 & wait' : 'trap \'echo TERM >> "$0"\' TERM; sleep 1';
  const group = spawn('sh', ['-c', script, options.trapFile ?? 'sh'], { detached: true, stdio: 'ignore', env: options.env });
  groups.push(group);
  const ended = new Promise<NodeJS.Signals | null>((resolve) => group.once('exit', (_code, signal) => resolve(signal)));
  return { pgid: group.pid!, startTime: procStat(group.pid!)![19]!, ended };
}

describe('the group signal helper', () => {
  it("leaves a group alone whose leader started at another time than the command's", async () => {
    const trapFile = join(root, 'term');
    const { pgid, startTime, ended } = liveGroup({ trapFile });
    expect(run(groupSignalArgv('/bin/sh', 'TERM', { pgid, startTime: String(Number(startTime) - 1) }))).toBe(0);
    // The leader handles a pending SIGTERM before it exits: its exit proves none came.
    expect(await within(10_000, ended, 'the leader ending by itself')).toBeNull();
    expect(() => readFileSync(trapFile, 'utf8')).toThrow();
  });

  it("signals the group with the leader's own start time, and a gone group is no error", async () => {
    const { pgid, startTime, ended } = liveGroup();
    expect(run(groupSignalArgv('/bin/sh', 'KILL', { pgid, startTime }))).toBe(0);
    expect(await within(10_000, ended, 'the leader ending by SIGKILL')).toBe('SIGKILL');
    expect(run(groupSignalArgv('/bin/sh', 'TERM', { pgid: 2147483646, startTime: '1' }))).toBe(0);
  });
});

describe('the sweep by tag', () => {
  it('kills every process carrying the tag, whatever its session, and only those', async () => {
    const id = `t-${randomUUID()}`;
    const tagged = liveGroup({ env: { ...process.env, [TAG_VARIABLE]: id } });
    const other = liveGroup({ env: { ...process.env, [TAG_VARIABLE]: `${id}x` } });
    const members = markedProcesses(TAG_VARIABLE, id);
    expect(members.length).toBeGreaterThan(0);
    expect(run(sweepArgv('/bin/sh', id))).toBe(0);
    expect(await within(10_000, tagged.ended, 'the tagged leader')).toBe('SIGKILL');
    // A member killed with the leader may still be dying on a busy machine (seen in CI): wait for each, then look again.
    for (const member of members) await ended(member.pid, 10_000, `the tagged ${member.cmdline}`);
    expect(markedProcesses(TAG_VARIABLE, id)).toEqual([]);
    expect(isLive(other.pgid)).toBe(true);
    // By prefix: every command of one sandbox handle.
    expect(run(sweepArgv('/bin/sh', { prefix: id }))).toBe(0);
    expect(await within(10_000, other.ended, 'the prefixed leader')).toBe('SIGKILL');
  });

  it('the tree kill: the group guarded by the start time, then the tag', async () => {
    const id = `t-${randomUUID()}`;
    const group = liveGroup();
    const escapee = liveGroup({ env: { ...process.env, [TAG_VARIABLE]: id } });
    expect(run(treeKillArgv('/bin/sh', group, id))).toBe(0);
    expect(await within(10_000, group.ended, 'the group')).toBe('SIGKILL');
    expect(await within(10_000, escapee.ended, 'the escapee')).toBe('SIGKILL');
  });

  it('refuses a pattern that is not an id', () => {
    expect(() => sweepArgv('/bin/sh', '.*')).toThrow(TypeError);
    expect(() => sweepArgv('/bin/sh', { prefix: '' })).toThrow(TypeError);
  });
});

/** The live processes whose argv holds the supervisor's name and `id` as whole words: a supervisor and its forks not yet exec'd. */
function supervisorsOf(id: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    let words: string[];
    try {
      words = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0');
    } catch {
      continue;
    }
    if (words.includes('sandstream-supervisor') && words.includes(id)) pids.push(Number(entry));
  }
  return pids;
}

describe('abandon', () => {
  it('ends a supervisor of unknown start and every fork of it, so none can exec its holder after the sweep', { timeout: 60_000 }, async () => {
    // A stand-in supervisor (its argv holds the name and the id as whole words) that keeps forking:
    // each fork waits, as one descheduled under load would, and then execs a holder tagged
    // `ID-holder`, as the real supervisor's holder does. Without rounds over the argv, a fork made
    // after the kill's listing outlived the supervisor, and its holder the tag's sweep.
    const standIn = (id: string): void => {
      const supervisor = spawn(
        'sh',
        ['-c', `while :; do (sleep 0.3; exec env ${TAG_VARIABLE}="$1-holder" sleep 1000) & sleep 0.005; done`, 'sandstream-supervisor', id],
        { detached: true, stdio: 'ignore' },
      );
      groups.push(supervisor);
    };
    const id = `abandon-${randomUUID()}`;
    // A second stand-in, never abandoned: its holders appearing later prove that the forks had time
    // to exec, before the abandoned one's absence is concluded.
    const control = `control-${randomUUID()}`;
    standIn(id);
    standIn(control);
    const holders = (of: string): number => markedProcesses(TAG_VARIABLE, `${of}-holder`).length;
    await waitFor(() => supervisorsOf(id).length > 3 && holders(control) > 0, 10_000, 'forks of the stand-ins, and a holder exec\'d');
    const before = holders(control);
    expect(run(['/bin/sh', '-c', HELPER, HELPER_NAME, 'abandon', id])).toBe(0);
    // Nothing with the supervisor's argv is left, so nothing can exec a holder later.
    expect(supervisorsOf(id)).toEqual([]);
    await waitFor(() => holders(control) >= before + 5, 10_000, "the control's later holders");
    expect(markedProcesses(TAG_VARIABLE, id, { prefix: true }).map((p) => `${p.pid} ${p.cmdline}`)).toEqual([]);
    killEach(markedProcesses(TAG_VARIABLE, control, { prefix: true }));
  });
});
