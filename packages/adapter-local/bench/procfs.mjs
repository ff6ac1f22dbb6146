// Process-table helpers shared by the benchmark and its group probe.
// Linux reads /proc; elsewhere the helpers degrade to "unknown" and the
// benchmark relies on process.kill(-pgid, 0) alone.
import { readdirSync, readFileSync } from 'node:fs';

export const HAS_PROCFS = (() => {
  try {
    readFileSync('/proc/self/stat', 'latin1');
    return true;
  } catch {
    return false;
  }
})();

/** `{ pid, state, ppid, pgrp }` of one process, or undefined if it is gone. */
export function procStat(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // The command name is parenthesised and may itself contain spaces or parens.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid, state: rest[0], ppid: Number(rest[1]), pgrp: Number(rest[2]) };
}

/** Every process visible in /proc. */
export function allProcs() {
  if (!HAS_PROCFS) return [];
  let names;
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const out = [];
  for (const name of names) {
    const code = name.charCodeAt(0);
    if (code < 48 || code > 57) continue;
    const stat = procStat(Number(name));
    if (stat !== undefined) out.push(stat);
  }
  return out;
}

/**
 * Whether a group member still counts as running. A zombie whose parent is
 * `ownerPid` is not gone yet (the owner has not reaped it); a zombie left to
 * another parent (an orphan waiting for init) has already ended.
 */
export function isLiveMember(stat, pgid, ownerPid) {
  if (stat === undefined || stat.pgrp !== pgid) return false;
  if (stat.state === 'Z' || stat.state === 'X') return stat.ppid === ownerPid;
  return true;
}
