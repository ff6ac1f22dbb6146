/**
 * The emulator's view of the host's process table: what /proc says of a
 * process, and which processes still belong to a command's group.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parseProcStat } from '@sandstream/types/runtime';

export interface ProcessEntry {
  readonly state: string;
  readonly ppid: number;
  readonly pgrp: number;
  /** When it started, in clock ticks since boot (field 22 of /proc/<pid>/stat). */
  readonly startTicks: number;
}

/** The process's state, parent, group and start time; undefined once it is gone. */
export function processState(pid: number): ProcessEntry | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // Fields from the third (state) on follow the last ')': the start time is the 22nd.
  const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  return { ...parseProcStat(stat), startTicks };
}

export function livePids(): Array<{ pid: number; ppid: number; pgrp: number; startTicks: number }> {
  const result: Array<{ pid: number; ppid: number; pgrp: number; startTicks: number }> = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return result;
  }
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    const state = processState(Number(entry));
    if (state === undefined || state.state === 'Z' || state.state === 'X') continue;
    result.push({ pid: Number(entry), ppid: state.ppid, pgrp: state.pgrp, startTicks: state.startTicks });
  }
  return result;
}

/**
 * Live members of the process group a command led, only while that group is
 * still the command's. A group id is a pid: once the leader and every member
 * are gone, the number can be handed to an unrelated process, which may lead a
 * group of its own (a test runner beside the emulator, say). Killing "the
 * group of every command ever started" then kills strangers; after thousands
 * of commands on a 32768-pid machine it did. So: no member when the leader's
 * pid now belongs to a process that started at another time, and only members
 * that started no sooner than the leader. (Left open: a reused group whose new
 * leader has exited too; its members started after ours, like our own.)
 */
export function ownGroupMembers(
  leader: number,
  leaderStartTicks: number | undefined,
  leaderRunning: boolean,
  live: ReadonlyArray<{ pid: number; pgrp: number; startTicks: number }> = livePids(),
): number[] {
  if (leaderStartTicks === undefined) return leaderRunning ? live.filter((entry) => entry.pgrp === leader).map((entry) => entry.pid) : [];
  const holder = processState(leader);
  if (holder !== undefined && holder.startTicks !== leaderStartTicks) return [];
  return live.filter((entry) => entry.pgrp === leader && entry.startTicks >= leaderStartTicks).map((entry) => entry.pid);
}

