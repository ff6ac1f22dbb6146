/**
 * Which processes an emulator counts as a command's group when it
 * closes or kills a sandbox: never a group that merely reuses the number of
 * a command that is gone (a soak of 10 000 commands beside another test run
 * had the emulator SIGKILL that run's npm).
 */
import { describe, expect, it } from 'vitest';
import { liveProcesses, ownGroupMembers, processState, type ProcessEntry } from '../../src/emulator/index.js';

/** A process as /proc would list it, for a table made up by the test. */
const entry = (pid: number, pgrp: number, startTicks: number): ProcessEntry => ({ pid, pgrp, session: pgrp, startTicks, ppid: 1, state: 'S' });

const self = processState(process.pid)!;

describe("the emulator's own groups", () => {
  it('reads a live process: its group and its start time', () => {
    expect(self.pgrp).toBeGreaterThan(0);
    expect(self.startTicks).toBeGreaterThan(0);
    expect(liveProcesses().find((entry) => entry.pid === process.pid)?.startTicks).toBe(self.startTicks);
  });

  it("a leader's number held by a process that started at another time is not the command's group: no member", () => {
    const live = [entry(424_242, process.pid, self.startTicks + 5)];
    expect(ownGroupMembers(process.pid, self.startTicks - 1, false, live)).toEqual([]);
    expect(ownGroupMembers(process.pid, self.startTicks + 1, false, live)).toEqual([]);
  });

  it('while the leader is the same process, members that started no sooner than it are the group', () => {
    const live = [
      entry(424_242, process.pid, self.startTicks),
      entry(424_243, process.pid, self.startTicks + 100),
      entry(424_244, process.pid, self.startTicks - 1),
      entry(424_245, process.pid + 1, self.startTicks + 100),
    ];
    expect(ownGroupMembers(process.pid, self.startTicks, false, live)).toEqual([424_242, 424_243]);
  });

  it('a leader whose start time was never read counts its group only while it runs', () => {
    const live = [entry(424_242, process.pid, self.startTicks)];
    expect(ownGroupMembers(process.pid, undefined, true, live)).toEqual([424_242]);
    expect(ownGroupMembers(process.pid, undefined, false, live)).toEqual([]);
  });
});
