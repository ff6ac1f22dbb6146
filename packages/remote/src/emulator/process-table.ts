/**
 * The host's process table as an emulator sees it: the real local
 * processes its commands became, read from Linux `/proc`, found by pid, by
 * group, by descent, or by the tag in their environment (ADR-0033:
 * `SANDSTREAM_COMMAND=<id>`, which every process of a command's tree
 * inherits, wherever it moved in the tree).
 */
import {
  descendants,
  groupMembers,
  liveProcesses,
  markedProcesses,
  readProcStat,
  signalEach,
  type MarkedProcess,
  type ProcessEntry,
} from '@sandstream/types/runtime';
import { TAG_VARIABLE } from '../supervisor.js';

// The reading of /proc is the runtime's (one reader for adapters, emulators and tests); what
// is the emulators' own is the tag variable they look for and whose group a command still owns.
export { descendants, groupMembers, liveProcesses, type ProcessEntry };

/** A process whose environment carries a tag. */
export interface TaggedProcess extends MarkedProcess {
  /** The tag's value. */
  readonly tag: string;
}

/** What `/proc` says of `pid` now; undefined once it is gone. */
export function processState(pid: number): ProcessEntry | undefined {
  return readProcStat(pid);
}

/**
 * Live members of the process group a command led, only while that group is
 * still the command's. A group id is a pid: once the leader and every member
 * are gone, the number can be handed to an unrelated process, which may lead
 * a group of its own (a test runner beside the emulator, say); killing "the
 * group of every command ever started" then kills strangers (after thousands
 * of commands on a 32768-pid machine it did). So: no member when the
 * leader's pid now belongs to a process that started at another time, and
 * only members that started no sooner than the leader.
 */
export function ownGroupMembers(
  leader: number,
  leaderStartTicks: number | undefined,
  leaderRunning: boolean,
  live: readonly ProcessEntry[] = liveProcesses(),
): number[] {
  if (leaderStartTicks === undefined) return leaderRunning ? groupMembers(leader, live) : [];
  const holder = processState(leader);
  if (holder !== undefined && holder.startTicks !== leaderStartTicks) return [];
  return live.filter((entry) => entry.pgrp === leader && entry.startTicks >= leaderStartTicks).map((entry) => entry.pid);
}

/**
 * Live processes whose environment has `variable` (default
 * `SANDSTREAM_COMMAND`), with the value `value` when given. Only processes
 * this user may read are seen; a zombie's environment is gone, so it never is.
 */
export function taggedProcesses(value?: string, variable: string = TAG_VARIABLE): TaggedProcess[] {
  return markedProcesses(variable, value).map((found) => ({ ...found, tag: found.value }));
}

/** Sends `signal` to each pid that is still there; returns how many were signalled. */
export function signalAll(targets: Iterable<number>, signal: NodeJS.Signals = 'SIGKILL'): number {
  return signalEach(targets, signal);
}

/**
 * The commands one emulator started, by leader pid, in start order: what a
 * request log cannot tell (a start refused by a fault is logged but never
 * ran), and what a test looks a command up by.
 */
export class ProcessTable<Command extends { readonly pid: number; readonly tag?: string | undefined }> {
  private readonly all: Command[] = [];
  private readonly byLeader = new Map<number, Command>();

  /** Adds a command the emulator just started (a later command with a reused pid replaces it in {@link byPid}). */
  add(command: Command): void {
    this.all.push(command);
    this.byLeader.set(command.pid, command);
  }

  /** Every command started, running or ended, in start order. */
  commands(): Command[] {
    return [...this.all];
  }

  /** The latest command whose leader had `pid`. */
  byPid(pid: number): Command | undefined {
    return this.byLeader.get(pid);
  }

  /** Commands whose tag (envd's process tag, Vercel's command id, ...) is `tag`. */
  byTag(tag: string): Command[] {
    return this.all.filter((command) => command.tag === tag);
  }

  /** The live processes of the host tagged `SANDSTREAM_COMMAND=<id>` (the tree of the command with that id). */
  treeOf(id: string): TaggedProcess[] {
    return taggedProcesses(id);
  }
}
