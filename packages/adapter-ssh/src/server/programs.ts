import { accessSync, constants } from 'node:fs';

const SEARCH = ['/usr/sbin', '/usr/bin', '/sbin', '/bin', '/usr/local/sbin', '/usr/local/bin'];

/** A host program from `dirs` (by default the usual directories), or undefined. */
export function findProgram(name: string, dirs: readonly string[] = SEARCH): string | undefined {
  for (const dir of dirs) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK);
      return `${dir}/${name}`;
    } catch {
      // not here
    }
  }
  return undefined;
}
