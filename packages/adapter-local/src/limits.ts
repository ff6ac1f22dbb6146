import type { ResourceLimits } from '@sandstream/types';
import { findUtility } from './utilities.js';

/** Finds util-linux's `prlimit`, which sets rlimits on the command it execs. */
export function findPrlimit(): string | undefined {
  return findUtility('prlimit');
}

/**
 * The `prlimit` prefix for a set of limits. `prlimit` execs the command, so
 * the pid, process group and exit status remain the command's own. The CPU
 * hard limit sits one second above the soft one so the command first gets
 * SIGXCPU, which names the cause in the result, rather than a bare SIGKILL.
 */
export function limitArgs(prlimit: string, limits: ResourceLimits): string[] {
  const args = [prlimit];
  if (limits.cpuSeconds !== undefined) args.push(`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`);
  if (limits.addressSpaceBytes !== undefined) args.push(`--as=${limits.addressSpaceBytes}`);
  if (limits.fileSizeBytes !== undefined) args.push(`--fsize=${limits.fileSizeBytes}`);
  if (limits.openFiles !== undefined) args.push(`--nofile=${limits.openFiles}`);
  args.push('--');
  return args;
}
