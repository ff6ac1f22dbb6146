import type { ResourceLimits } from '../options.js';

/**
 * The words that run a command under its resource limits through
 * util-linux's `prlimit`, to be put before the command's argv. `prlimit`
 * execs the command, so its pid, process group and exit status stay the
 * command's own. The CPU hard limit sits one second above the soft one, so
 * the command first gets SIGXCPU, which names the cause in the result,
 * rather than a bare SIGKILL.
 *
 * @param prlimit - the path of `prlimit` where the command runs.
 *
 * @example
 * ```ts
 * import { prlimitArgs } from '@sandstream/types/runtime';
 * const argv = [...prlimitArgs('/usr/bin/prlimit', { cpuSeconds: 2 }), 'sh', '-c', 'work'];
 * // ['/usr/bin/prlimit', '--cpu=2:3', '--', 'sh', '-c', 'work']
 * ```
 */
export function prlimitArgs(prlimit: string, limits: ResourceLimits): string[] {
  const args = [prlimit];
  if (limits.cpuSeconds !== undefined) args.push(`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`);
  if (limits.addressSpaceBytes !== undefined) args.push(`--as=${limits.addressSpaceBytes}`);
  if (limits.fileSizeBytes !== undefined) args.push(`--fsize=${limits.fileSizeBytes}`);
  if (limits.openFiles !== undefined) args.push(`--nofile=${limits.openFiles}`);
  args.push('--');
  return args;
}
