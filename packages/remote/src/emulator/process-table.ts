/**
 * The host's process table as an emulator sees it: the real local
 * processes its commands became, read from Linux `/proc`, found by pid, by
 * group, by descent, or by the tag in their environment (ADR-0033:
 * `SANDSTREAM_COMMAND=<id>`, which every process of a command's tree
 * inherits, wherever it moved in the tree).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parseProcStat } from '@sandstream/types/runtime';
import { TAG_VARIABLE } from '../supervisor.js';

/** One process as `/proc/<pid>/stat` describes it. */
export interface ProcessEntry {
  readonly pid: number;
  /** Kernel state letter (`R`, `S`, `T`, `Z`, ...). */
  readonly state: string;
  readonly ppid: number;
  /** Process group id. */
  readonly pgrp: number;
  /** When it started, in clock ticks since boot (field 22 of the stat line): tells a process from a later one with its number. */
  readonly startTicks: number;
}

/** A process whose environment carries a tag. */
export interface TaggedProcess extends ProcessEntry {
  /** The tag's value. */
  readonly tag: string;
  /** The command line, arguments joined by spaces. */
  readonly cmdline: string;
  /** Every `NAME=value` entry of its environment. */
  readonly environ: readonly string[];
}

/** What `/proc` says of `pid` now; undefined once it is gone. */
export function processState(pid: number): ProcessEntry | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // Fields from the third (state) on follow the last ')': the start time is the 22nd.
  const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  return { pid, ...parseProcStat(stat), startTicks };
}

function pids(): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first >= 48 && first <= 57) found.push(Number(entry));
  }
  return found;
}

const living = (state: string): boolean => state !== 'Z' && state !== 'X';

/** Every live (neither zombie nor dead) process of the host. */
export function liveProcesses(): ProcessEntry[] {
  const found: ProcessEntry[] = [];
  for (const pid of pids()) {
    const entry = processState(pid);
    if (entry !== undefined && living(entry.state)) found.push(entry);
  }
  return found;
}

/** Live members of process group `pgid`. */
export function groupMembers(pgid: number, live: readonly ProcessEntry[] = liveProcesses()): number[] {
  return live.filter((entry) => entry.pgrp === pgid).map((entry) => entry.pid);
}

/** Live descendants of `pid` still parented to it or its descendants (an orphan reparented elsewhere is not one). */
export function descendants(pid: number, live: readonly ProcessEntry[] = liveProcesses()): number[] {
  const found = new Set<number>([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const entry of live) {
      if (!found.has(entry.pid) && found.has(entry.ppid)) {
        found.add(entry.pid);
        grew = true;
      }
    }
  }
  found.delete(pid);
  return [...found];
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
  const prefix = `${variable}=`;
  const found: TaggedProcess[] = [];
  for (const pid of pids()) {
    if (pid === process.pid) continue;
    let environ: string[];
    try {
      environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const entry = environ.find((e) => e.startsWith(prefix));
    if (entry === undefined) continue;
    const tag = entry.slice(prefix.length);
    if (value !== undefined && tag !== value) continue;
    const state = processState(pid);
    if (state === undefined || !living(state.state)) continue;
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      // Gone meanwhile.
    }
    found.push({ ...state, tag, cmdline, environ: environ.filter((e) => e !== '') });
  }
  return found;
}

/** Sends `signal` to each pid that is still there; returns how many were signalled. */
export function signalAll(targets: Iterable<number>, signal: NodeJS.Signals = 'SIGKILL'): number {
  let sent = 0;
  for (const pid of targets) {
    try {
      process.kill(pid, signal);
      sent++;
    } catch {
      // Gone.
    }
  }
  return sent;
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
