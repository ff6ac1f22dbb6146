import { isRunningState, someProcess } from '@sandstream/types/runtime';
import { cannotOpen as exhausted } from './exhaustion.js';

/**
 * Whether process group `pgid` has a member that is neither a zombie nor
 * dead, as the procfs mounted at `proc` lists them (the host's `/proc`, or a
 * sandbox's seen through its init), or undefined when `proc` cannot be read.
 * Reads every process's `stat` until a member is found: a cost that grows
 * with the processes listed. When this process is out of descriptors or
 * memory (EMFILE, ENFILE, ENOMEM), the listing or a `stat` cannot be read,
 * and the answer is true: a group is never reported empty while one of its
 * members could not be looked at; the callers poll again.
 */
export function groupHasLiveMember(proc: string, pgid: number): boolean | undefined {
  return someProcess((entry) => entry.pgrp === pgid && isRunningState(entry.state), {
    proc,
    unreadable: (error) => (exhausted(error) ? true : undefined),
  });
}
