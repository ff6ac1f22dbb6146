import { accessSync, constants } from 'node:fs';

const DIRECTORIES = ['/usr/bin', '/bin', '/usr/local/bin', '/usr/sbin', '/sbin'];

/**
 * Finds an executable of util-linux (`prlimit`, `setpriv`) in the system
 * directories. These exec the command they wrap, so the pid, the process
 * group and the exit status stay the command's own; no native addon needed.
 */
export function findUtility(name: string): string | undefined {
  for (const directory of DIRECTORIES) {
    const path = `${directory}/${name}`;
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // try the next place
    }
  }
  return undefined;
}
