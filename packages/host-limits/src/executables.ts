import { accessSync, constants, readFileSync } from 'node:fs';

/** A util-linux program from the usual directories, or undefined. */
export function findExecutable(name: string): string | undefined {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin']) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK);
      return `${dir}/${name}`;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** This process's soft and hard limit called `name` in /proc/self/limits (`unlimited` or a number, as text). */
export function limitOf(name: string): { soft: string; hard: string } {
  const line = readFileSync('/proc/self/limits', 'latin1')
    .split('\n')
    .find((l) => l.startsWith(name));
  const [soft = 'unlimited', hard = 'unlimited'] = line?.slice(name.length).trim().split(/\s+/) ?? [];
  return { soft, hard };
}
