import { isRunningState, liveProcesses, someProcess, type ProcessEntry } from '@sandstream/types/runtime';
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

/**
 * Whether the session `sid` (a terminal command's, ADR-0053) has a member
 * neither zombie nor dead that started no earlier than its leader
 * (`leaderStartTicks`): a process older than the leader is no process of
 * the command's, whatever number its session has. Answers as
 * {@link groupHasLiveMember} does.
 */
export function sessionHasLiveMember(proc: string, sid: number, leaderStartTicks: number): boolean | undefined {
  return someProcess((entry) => entry.session === sid && entry.startTicks >= leaderStartTicks && isRunningState(entry.state), {
    proc,
    unreadable: (error) => (exhausted(error) ? true : undefined),
  });
}

/**
 * The processes of session `sid` that started no earlier than its leader
 * and are neither zombie nor dead: the jobs of an interactive shell
 * included, each leading a group of its own in the session. Never this
 * process.
 */
export function sessionMembers(sid: number, leaderStartTicks: number, live: readonly ProcessEntry[] = liveProcesses()): number[] {
  return live
    .filter((entry) => entry.session === sid && entry.startTicks >= leaderStartTicks && entry.pid > 1 && entry.pid !== process.pid)
    .map((entry) => entry.pid);
}

/** Sends `signal` to the process group `pgid` leads; a group already gone is no error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  // Never 0, -1 nor this process's own: those address this process's group, or every process.
  if (!Number.isSafeInteger(pgid) || pgid <= 1) return;
  try {
    // A negative pid addresses the whole process group the command leads.
    process.kill(-pgid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/**
 * True while a process of the group is alive. `kill(-pgid, 0)` also counts
 * zombies, and an orphan whose new parent does not reap (a container's
 * init often does not) stays a zombie for good; so when procfs exists, a
 * group whose members are all zombies counts as gone.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  // Without procfs, zombies count as alive.
  return groupHasLiveMember('/proc', pgid) ?? true;
}
