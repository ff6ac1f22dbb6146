import { accessSync, constants } from 'node:fs';

const SEARCH = ['/usr/sbin', '/usr/bin', '/sbin', '/bin', '/usr/local/sbin', '/usr/local/bin'];

/** A host program from the usual directories, or undefined. */
export function findExecutable(name: string): string | undefined {
  for (const dir of SEARCH) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK);
      return `${dir}/${name}`;
    } catch {
      // not here
    }
  }
  return undefined;
}
