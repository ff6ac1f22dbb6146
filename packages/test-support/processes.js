// Finds the processes a test run started, by a marker variable in their
// environment, through /proc. Shared by the suites that check that nothing
// they start outlives them.
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The fields of `/proc/<pid>/stat` after the parenthesised command name
 * (which may hold spaces and parentheses): [state, ppid, pgrp, session, ...];
 * undefined once the process is gone.
 */
export function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The state letter of a process (`R`, `S`, `Z`, ...), or undefined once it is gone. */
export function procState(pid) {
  return procStat(pid)?.[0];
}

/** True while the process exists and is not a zombie (or dead). */
export function isLive(pid) {
  const state = procState(pid);
  return state !== undefined && state !== '' && state !== 'Z' && state !== 'X';
}

/**
 * Resolves once a process that is not this one's child (so no exit event
 * reaches us) has ended, polling /proc; rejects naming its last state after
 * `ms`. For a process already sent SIGKILL: the signal is delivered when the
 * kernel next runs it, which on a loaded machine is not at once.
 */
export async function ended(pid, ms, what = `process ${pid}`) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!isLive(pid)) return;
    if (Date.now() >= deadline) throw new Error(`${what} was still live (state ${procState(pid)}) ${ms} ms on`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Live processes other than this one whose environment has `name=value`;
 * with `prefix`, any value starting with `value`.
 */
export function markedProcesses(name, value, { prefix = false } = {}) {
  const needle = prefix ? `\0${name}=${value}` : `\0${name}=${value}\0`;
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let environ;
    try {
      environ = `\0${readFileSync(`/proc/${pid}/environ`, 'latin1')}\0`;
    } catch {
      continue;
    }
    if (!environ.includes(needle) || !isLive(pid)) continue;
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
    } catch {
      // gone meanwhile
    }
    found.push({ pid, cmdline });
  }
  return found;
}

export function killEach(processes, signal = 'SIGKILL') {
  for (const { pid } of processes) {
    try {
      process.kill(pid, signal);
    } catch {
      // Ended between the listing and the kill.
    }
  }
}
