import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import type { CommandSpec } from '@sandstream/types/runtime';
import { describeExhaustion } from './exhaustion.js';

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Where `execvp` would find `file`, or undefined. Needed when `prlimit` or
 * `setpriv` execs the command: their failure to find the program would
 * otherwise look like the command's own exit status.
 */
export function findExecutable(file: string, path: string | undefined, cwd: string): string | undefined {
  if (file.includes('/')) {
    const full = resolve(cwd, file);
    return isExecutableFile(full) ? full : undefined;
  }
  for (const dir of (path ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter)) {
    const full = resolve(cwd, join(dir === '' ? '.' : dir, file));
    if (isExecutableFile(full)) return full;
  }
  return undefined;
}

/** Why a spawn failed, in words a caller can act on. */
export function spawnFailure(command: CommandSpec, cwd: string, error: NodeJS.ErrnoException): string {
  const exhausted = describeExhaustion(error);
  if (exhausted !== undefined) return exhausted;
  const code = error.code ?? error.message;
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') {
    let cwdProblem: string | undefined;
    try {
      if (!statSync(cwd).isDirectory()) cwdProblem = 'is not a directory';
    } catch (statError) {
      cwdProblem = (statError as NodeJS.ErrnoException).code === 'EACCES' ? 'is not accessible' : 'does not exist';
    }
    if (cwdProblem !== undefined) return `${code}: the working directory ${JSON.stringify(cwd)} ${cwdProblem}`;
    if (code === 'ENOENT') return `ENOENT: no such executable ${JSON.stringify(command.argv[0] ?? '')}`;
  }
  return `${code}: ${error.message}`;
}
