import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { waitFor } from '@sandstream/test-support/timing';
import { afterEach, describe, expect, it } from 'vitest';
import { descendants, groupMembers, ownGroupMembers, ProcessTable, processState, signalAll, taggedProcesses, TAG_VARIABLE_FOR_TEST } from './table-harness.js';

const started: ChildProcess[] = [];
afterEach(async () => {
  for (const child of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      // Its whole group: the test's commands lead their own.
      signalAll([-child.pid!]);
      await once(child, 'exit');
    }
  }
});

/** `sh` leading a group of its own, tagged, with one `sleep` child; resolves once both are up. */
async function taggedTree(tag: string): Promise<{ leader: number; child: number }> {
  const sh = spawn('/bin/sh', ['-c', 'sleep 30 & echo $!; wait'], { env: { ...process.env, [TAG_VARIABLE_FOR_TEST]: tag }, detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  started.push(sh);
  const [line] = (await once(sh.stdout!, 'data')) as [Buffer];
  const child = Number(line.toString().trim());
  // `$!` is known as soon as the shell forked: the child may not have exec'd `sleep` yet, and in
  // between its /proc entries can read empty (seen under load). Up means running `sleep`.
  const runsSleep = (): boolean => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, 'latin1').startsWith('sleep\0');
    } catch {
      return false;
    }
  };
  await waitFor(runsSleep, 10_000, `pid ${child} running sleep`);
  return { leader: sh.pid!, child };
}

describe('the process table', () => {
  it('finds a tree by its SANDSTREAM_COMMAND tag, by pid, by group and by descent', async () => {
    const tag = randomUUID();
    const { leader, child } = await taggedTree(tag);
    const tree = taggedProcesses(tag);
    expect(tree.map((p) => p.pid).sort()).toEqual([leader, child].sort());
    expect(tree.find((p) => p.pid === child)).toMatchObject({ tag, pgrp: leader, ppid: leader });
    expect(tree.find((p) => p.pid === leader)!.cmdline).toMatch(/^\/bin\/sh -c sleep 30 &/);
    expect(taggedProcesses(randomUUID())).toEqual([]);
    expect(processState(leader)).toMatchObject({ pid: leader, pgrp: leader });
    expect(groupMembers(leader).sort()).toEqual([leader, child].sort());
    expect(descendants(leader)).toEqual([child]);
    const ticks = processState(leader)!.startTicks;
    expect(ownGroupMembers(leader, ticks, true).sort()).toEqual([leader, child].sort());
    // A leader's number now held by a process that started at another time: none of ours.
    expect(ownGroupMembers(leader, ticks - 1, true)).toEqual([]);

    const table = new ProcessTable<{ pid: number; tag: string }>();
    table.add({ pid: leader, tag });
    expect(table.byPid(leader)).toEqual({ pid: leader, tag });
    expect(table.byTag(tag)).toHaveLength(1);
    expect(table.treeOf(tag)).toHaveLength(2);
  });

  it('forgets a process once it is gone', async () => {
    const { leader, child } = await taggedTree(randomUUID());
    expect(signalAll([child])).toBe(1);
    await once(started.at(-1)!, 'exit');
    expect(processState(child)).toBeUndefined();
    expect(processState(leader)).toBeUndefined();
    expect(signalAll([child])).toBe(0);
  });
});
