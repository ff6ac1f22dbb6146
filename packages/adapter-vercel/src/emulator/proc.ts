import { readdirSync, readFileSync } from 'node:fs';
import { parseProcStat } from '@sandstream/types/runtime';

/** One row of the emulator's process table. */
export interface EmulatedProcess {
  readonly pid: number;
  readonly ppid: number;
  /** Process group id. */
  readonly pgid: number;
  /** Kernel state letter (`R`, `S`, `T`, `Z`, ...). */
  readonly state: string;
  /** The emulated session (sandbox) the process belongs to. */
  readonly sessionId: string;
  /** The command whose tree the process is part of. */
  readonly cmdId: string;
  /** The command line, arguments joined by spaces. */
  readonly cmdline: string;
  /** Every `NAME=value` entry of its environment. */
  readonly environ: readonly string[];
}

export const SESSION_VARIABLE = 'VERCEL_EMULATOR_SESSION';
export const COMMAND_VARIABLE = 'VERCEL_EMULATOR_COMMAND';

function readStat(pid: string): { ppid: number; pgid: number; state: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const { state, ppid, pgrp } = parseProcStat(stat);
    return { state, ppid, pgid: pgrp };
  } catch {
    return undefined;
  }
}

/**
 * Every process on this host whose environment carries the emulator's
 * session tag: the commands of emulated sandboxes and everything they
 * started, wherever it moved in the process tree. Zombies included (their
 * environment is gone, so only processes seen alive are listed).
 */
export function scanProcesses(sessionId?: string): EmulatedProcess[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: EmulatedProcess[] = [];
  const wanted = sessionId === undefined ? undefined : `${SESSION_VARIABLE}=${sessionId}`;
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57 || Number(entry) === process.pid) continue;
    let environ: string[];
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const session = environ.find((e) => e.startsWith(`${SESSION_VARIABLE}=`));
    if (session === undefined || (wanted !== undefined && session !== wanted)) continue;
    const stat = readStat(entry);
    if (stat === undefined) continue;
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      // gone meanwhile
    }
    const command = environ.find((e) => e.startsWith(`${COMMAND_VARIABLE}=`));
    found.push({
      pid: Number(entry),
      ...stat,
      sessionId: session.slice(SESSION_VARIABLE.length + 1),
      cmdId: command === undefined ? '' : command.slice(COMMAND_VARIABLE.length + 1),
      cmdline,
      environ: environ.filter((e) => e !== ''),
    });
  }
  return found;
}

/** SIGKILL to every live process of the session (as stopping a VM ends everything in it); returns how many were found. */
export function killSession(sessionId: string): number {
  let killed = 0;
  for (const proc of scanProcesses(sessionId)) {
    if (proc.state === 'Z') continue;
    try {
      process.kill(proc.pid, 'SIGKILL');
      killed++;
    } catch {
      // already gone
    }
  }
  return killed;
}
