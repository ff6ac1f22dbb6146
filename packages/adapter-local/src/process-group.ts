import { readdirSync, readFileSync } from 'node:fs';
import { isRunningState, parseProcStat } from '@sandstream/types/runtime';
import { cannotOpen as exhausted } from './exhaustion.js';

/**
 * Whether process group `pgid` has a member that is neither a zombie nor
 * dead, as the procfs mounted at `proc` lists them (the host's `/proc`, or a
 * sandbox's seen through its init), or undefined when `proc` cannot be read.
 * Reads every process's `stat`: a cost that grows with the processes listed.
 * When this process is out of descriptors or memory (EMFILE, ENFILE,
 * ENOMEM), the listing or a `stat` cannot be read, and the answer is true:
 * a group is never reported empty while one of its members could not be
 * looked at; the callers poll again.
 */
export function groupHasLiveMember(proc: string, pgid: number): boolean | undefined {
  let entries: string[];
  try {
    entries = readdirSync(proc);
  } catch (error) {
    return exhausted(error) ? true : undefined;
  }
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`${proc}/${entry}/stat`, 'latin1');
    } catch (error) {
      if (exhausted(error)) return true;
      continue;
    }
    const { state, pgrp } = parseProcStat(stat);
    if (pgrp === pgid && isRunningState(state)) return true;
  }
  return false;
}
