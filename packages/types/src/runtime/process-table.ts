/**
 * The host's process table as Linux `/proc` shows it: one process's stat,
 * the pids listed, the live ones, whether one satisfies a test, a group's
 * members, a tree's descendants,
 * the processes whose environment carries a mark, and signals to a set of
 * pids. One reader for the adapters that must end what they start, for the
 * emulators that play a remote backend with real processes, and for the
 * tests and tools that check nothing outlived a run. A process that ends
 * while it is being read is never an error: it is simply not there.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** The fields of a `/proc/<pid>/stat` line that process-tree checks need. */
export interface ProcStat {
  /** The state letter: `R`, `S`, `D`, `T`, `Z` (zombie), `X` (dead), ... */
  readonly state: string;
  /** The parent's pid. */
  readonly ppid: number;
  /** The process group. */
  readonly pgrp: number;
  /** The session. */
  readonly session: number;
  /**
   * When it started, in clock ticks since boot (field 22 of the line): tells
   * a process from a later one that was given its pid.
   */
  readonly startTicks: number;
}

/** One process of the table: its pid and what its stat line says. */
export interface ProcessEntry extends ProcStat {
  readonly pid: number;
}

/** A process whose environment carries the variable looked for. */
export interface MarkedProcess extends ProcessEntry {
  /** The variable's value in its environment. */
  readonly value: string;
  /** Its command line, arguments joined by spaces (empty once it is gone). */
  readonly cmdline: string;
  /** Every `NAME=value` entry of its environment. */
  readonly environ: readonly string[];
}

/** The fields of `/proc/<pid>/status` that tell whose a process is and how many tasks it counts. */
export interface ProcStatus {
  /** The real uid: the one `RLIMIT_NPROC` counts the process against. */
  readonly realUid: number;
  /** Its threads (each a task of the uid). */
  readonly threads: number;
}

/**
 * The fields of a stat line from the state on: index 0 is the state, 1 the
 * parent, 2 the group, 3 the session, 19 the start time. The command name
 * before them is parenthesised and may itself hold spaces and parentheses,
 * so they are counted from the last `)`.
 */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * Parses the text of a Linux `/proc/<pid>/stat` file. Reading it is
 * {@link readProcStat}'s part, or the caller's when a vanished process means
 * something else to it.
 */
export function parseProcStat(stat: string): ProcStat {
  return fromFields(statFields(stat));
}

function fromFields(fields: readonly string[]): ProcStat {
  return {
    state: fields[0] ?? '',
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
    startTicks: Number(fields[19]),
  };
}

/** True for the state of a process that has not exited: neither zombie (`Z`) nor dead (`X`). */
export function isRunningState(state: string): boolean {
  return state !== '' && state !== 'Z' && state !== 'X';
}

/**
 * The raw fields of `<proc>/<pid>/stat` from the state on (see
 * {@link parseProcStat} for what they mean); undefined once the process is
 * gone or cannot be read. `proc` is the procfs to read: the host's by
 * default, or a sandbox's seen through its init (`/proc/<init>/root/proc`).
 */
export function readProcStatFields(pid: number, proc = '/proc'): string[] | undefined {
  try {
    return statFields(readFileSync(`${proc}/${pid}/stat`, 'latin1'));
  } catch {
    return undefined;
  }
}

/** What `<proc>/<pid>/stat` says of `pid` now; undefined once it is gone. */
export function readProcStat(pid: number, proc = '/proc'): ProcessEntry | undefined {
  const fields = readProcStatFields(pid, proc);
  return fields === undefined ? undefined : { pid, ...fromFields(fields) };
}

/** True while `pid` exists and is neither a zombie nor dead. */
export function isLiveProcess(pid: number, proc = '/proc'): boolean {
  return isRunningState(readProcStat(pid, proc)?.state ?? '');
}

/** The pids `proc` lists now; none when it cannot be read. */
export function listPids(proc = '/proc'): number[] {
  let entries: string[];
  try {
    entries = readdirSync(proc);
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    // A digit first: the pids; the rest (self, sys, meminfo, ...) are not processes.
    const first = entry.charCodeAt(0);
    if (first >= 48 && first <= 57) found.push(Number(entry));
  }
  return found;
}

/** Options of {@link someProcess}. */
export interface ProcessScanOptions {
  /** The procfs to read (default `/proc`). */
  readonly proc?: string;
  /**
   * Judges a read that failed (the listing, or a process's stat): an answer
   * ends the scan with it; undefined goes on (a process that ended while it
   * was read). By default every failure is a process that ended, and a
   * listing that fails answers undefined. An adapter out of descriptors
   * answers true: it could not look, so it must not report a group empty.
   */
  readonly unreadable?: (error: unknown) => boolean | undefined;
}

/**
 * Whether a process `proc` lists satisfies `test`, reading stat lines only
 * until one does (a poll of a group while its command ends runs this often,
 * so it stops at the first match instead of reading the whole table);
 * undefined when the table cannot be listed.
 *
 * @example
 * ```ts
 * import { isRunningState, someProcess } from '@sandstream/types/runtime';
 * const pgid = process.pid;
 * const groupAlive = someProcess((entry) => entry.pgrp === pgid && isRunningState(entry.state));
 * ```
 */
export function someProcess(test: (entry: ProcessEntry) => boolean, options: ProcessScanOptions = {}): boolean | undefined {
  const proc = options.proc ?? '/proc';
  let entries: string[];
  try {
    entries = readdirSync(proc);
  } catch (error) {
    return options.unreadable?.(error);
  }
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`${proc}/${entry}/stat`, 'latin1');
    } catch (error) {
      const answer = options.unreadable?.(error);
      if (answer !== undefined) return answer;
      continue;
    }
    if (test({ pid: Number(entry), ...parseProcStat(stat) })) return true;
  }
  return false;
}

/** Every live (neither zombie nor dead) process `proc` lists. */
export function liveProcesses(proc = '/proc'): ProcessEntry[] {
  const found: ProcessEntry[] = [];
  for (const pid of listPids(proc)) {
    const entry = readProcStat(pid, proc);
    if (entry !== undefined && isRunningState(entry.state)) found.push(entry);
  }
  return found;
}

/** Live members of process group `pgid`, from `live` (a fresh {@link liveProcesses} by default). */
export function groupMembers(pgid: number, live: readonly ProcessEntry[] = liveProcesses()): number[] {
  return live.filter((entry) => entry.pgrp === pgid).map((entry) => entry.pid);
}

/**
 * Live descendants of `pid` still parented to it or to its descendants (an
 * orphan reparented elsewhere is not one), from `live`.
 */
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

/** The argv of `pid` from `<proc>/<pid>/cmdline`; undefined once it is gone (empty for a zombie or a kernel thread). */
export function readProcArgv(pid: number, proc = '/proc'): string[] | undefined {
  let cmdline: string;
  try {
    cmdline = readFileSync(`${proc}/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
  const argv = cmdline.split('\0');
  if (argv.at(-1) === '') argv.pop();
  return argv;
}

/** Options of {@link markedProcesses}. */
export interface MarkedProcessesOptions {
  /** Match any value that starts with the one given, instead of exactly it. */
  readonly prefix?: boolean;
  /** The procfs to read (default `/proc`). */
  readonly proc?: string;
}

/**
 * Live processes other than this one whose environment has `name=value`:
 * exactly, or with `prefix` any value that starts with `value`; with no
 * `value`, any value. A variable every process of a tree inherits (a run's
 * mark) finds the whole tree, wherever its processes moved: in sessions of
 * their own, or reparented. Only processes this user may read are seen, and
 * a zombie's environment is gone, so it never is.
 */
export function markedProcesses(name: string, value?: string, options: MarkedProcessesOptions = {}): MarkedProcess[] {
  const proc = options.proc ?? '/proc';
  const start = `${name}=`;
  const found: MarkedProcess[] = [];
  for (const pid of listPids(proc)) {
    if (pid === process.pid) continue;
    let environ: string[];
    try {
      environ = readFileSync(`${proc}/${pid}/environ`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const entry = environ.find((e) => e.startsWith(start));
    if (entry === undefined) continue;
    const carried = entry.slice(start.length);
    if (value !== undefined && (options.prefix === true ? !carried.startsWith(value) : carried !== value)) continue;
    const stat = readProcStat(pid, proc);
    if (stat === undefined || !isRunningState(stat.state)) continue;
    const cmdline = readProcArgv(pid, proc)?.join(' ').trim() ?? '';
    found.push({ ...stat, value: carried, cmdline, environ: environ.filter((e) => e !== '') });
  }
  return found;
}

/** Whose `pid` is and how many tasks it counts, from `<proc>/<pid>/status`; undefined once it is gone. */
export function readProcStatus(pid: number, proc = '/proc'): ProcStatus | undefined {
  let status: string;
  try {
    status = readFileSync(`${proc}/${pid}/status`, 'latin1');
  } catch {
    return undefined;
  }
  return {
    realUid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]),
    threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1),
  };
}

/**
 * Sends `signal` (SIGKILL by default) to each pid; one that ended between
 * its listing and the signal is no error. Returns how many were signalled.
 */
export function signalEach(pids: Iterable<number>, signal: NodeJS.Signals = 'SIGKILL'): number {
  let sent = 0;
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
      sent++;
    } catch {
      // Gone.
    }
  }
  return sent;
}
