/**
 * What a command's driver needs of the environment it enters, and the looks
 * into an environment's /proc that both kinds of environment take.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { groupHasLiveMember } from '../process-group.js';

/**
 * What a command's driver needs of the environment it enters: one this
 * process made (`Environment`, environment.ts), or one it joined (join.ts).
 */
export interface EnvironmentHandle {
  /** Resolves once a command may enter the namespaces. */
  readonly enterable: Promise<void>;
  /** Resolves once commands may run. */
  readonly ready: Promise<void>;
  /** The init's host pid while the environment lives. */
  readonly initPid: number | undefined;
  /** Why commands cannot enter any more, or undefined while they can. */
  readonly gone: Error | undefined;
  /** Whether the environment shares the host's network namespace. */
  readonly network: boolean;
  groupAlive(pgid: number): boolean;
  holds(target: string): boolean;
}

/** `Environment.groupAlive`, for the environment whose init has host pid `init`. */
export function groupAliveIn(init: number, pgid: number): boolean {
  // An unreadable /proc of the sandbox: the namespace has ended.
  return groupHasLiveMember(`/proc/${init}/root/proc`, pgid) ?? false;
}

/** `Environment.holds`, for the environment whose init has host pid `init`. */
export function holdsIn(init: number, target: string): boolean {
  const proc = `/proc/${init}/root/proc`;
  let entries: string[];
  try {
    entries = readdirSync(proc);
  } catch (error) {
    // The namespace has ended: nothing of it holds anything.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    let fds: string[];
    try {
      fds = readdirSync(`${proc}/${entry}/fd`);
    } catch (error) {
      // A process that is gone holds nothing; one that cannot be read may.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      return true;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`${proc}/${entry}/fd/${fd}`) === target) return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return true;
      }
    }
  }
  return false;
}
