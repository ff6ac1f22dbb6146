import { readFileSync } from 'node:fs';
import { InvalidArgument } from '@sandstream/types';

/** The identity a command runs as. */
export interface UserIds {
  readonly uid: number;
  readonly gid: number;
  /** The login name and home directory, when the passwd database has the account. */
  readonly name?: string;
  readonly home?: string;
}

/**
 * Resolves an account name (or a numeric uid) through `/etc/passwd`. An
 * unknown name is the caller's mistake, reported before anything starts.
 */
export function resolveUser(name: string, passwdPath = '/etc/passwd'): UserIds {
  let passwd = '';
  try {
    passwd = readFileSync(passwdPath, 'utf8');
  } catch {
    // fall through: only numeric ids can be honoured without the database
  }
  for (const line of passwd.split('\n')) {
    const [login, , uid, gid, , home] = line.split(':');
    if (login === undefined || uid === undefined || gid === undefined) continue;
    if (login === name || uid === name) {
      return { uid: Number(uid), gid: Number(gid), name: login, ...(home ? { home } : {}) };
    }
  }
  if (/^[0-9]+$/.test(name)) return { uid: Number(name), gid: Number(name) };
  throw new InvalidArgument('options.user', `no account named ${JSON.stringify(name)} in ${passwdPath}`);
}

/**
 * The `setpriv` prefix that switches to an account. Unlike a plain uid/gid
 * switch, it keeps the account's supplementary groups (`--init-groups`,
 * which needs the account in the passwd database; an account known only by
 * number gets none).
 */
export function switchUserArgs(setpriv: string, user: UserIds): string[] {
  return [setpriv, `--reuid=${user.uid}`, `--regid=${user.gid}`, user.name === undefined ? '--clear-groups' : '--init-groups', '--'];
}

/** Whether this process may switch to another account (it must be root). */
export function canSwitchUser(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}
