import { tmpdir } from 'node:os';
import { listPids, readProcStatus } from '@sandstream/types/runtime';
import { findExecutable } from './executables.js';

/** What {@link asUnusedUid} gives: the argv to run, or why it cannot be run so. */
export type OtherUidRun =
  | {
      /** The argv to spawn: `argv` itself, or behind setpriv. */
      readonly argv: string[];
      /** The uid it runs as; undefined when it runs as this process's. */
      readonly uid: number | undefined;
      /** What its environment must change (HOME, which root's is not the other uid's to enter). */
      readonly env: Readonly<Record<string, string>>;
    }
  | {
      /** Why it cannot run as another uid (setpriv is missing). */
      readonly skip: string;
    };

/**
 * How many tasks (threads included) each uid owns now: the real uid of
 * every process listed, the one RLIMIT_NPROC counts against.
 */
export function tasksByUid(): Map<number, number> {
  const counts = new Map<number, number>();
  for (const pid of listPids()) {
    const status = readProcStatus(pid);
    if (status !== undefined) counts.set(status.realUid, (counts.get(status.realUid) ?? 0) + status.threads);
  }
  return counts;
}

/** A uid that owns no task, from a range no distribution allocates. */
function unusedUid(): number {
  const used = tasksByUid();
  for (let uid = 2_000_000_000 + (process.pid % 100_000) * 10; ; uid++) if (!used.has(uid)) return uid;
}

/**
 * The argv that runs `argv` as a uid that owns no task, when this process
 * is root (setpriv, no groups: it reads what others may read and writes
 * where others may, such as /tmp): root is exempt from RLIMIT_NPROC, so
 * `limitSelf` can limit processes only in a process of another uid; `env`
 * holds what its environment must change. Otherwise `argv` itself.
 * `{ skip }` with the reason when setpriv is missing.
 *
 * @example
 * ```ts
 * const run = asUnusedUid([process.execPath, 'flood.mjs']);
 * if ('argv' in run) spawn(run.argv[0]!, run.argv.slice(1), { env: { ...process.env, ...run.env } });
 * ```
 */
export function asUnusedUid(argv: readonly string[]): OtherUidRun {
  if (process.getuid?.() !== 0) return { argv: [...argv], uid: undefined, env: {} };
  const setpriv = findExecutable('setpriv');
  if (setpriv === undefined) return { skip: 'util-linux setpriv is not installed (as root, a process limit needs another uid)' };
  const uid = unusedUid();
  // root's home is not the other uid's to enter (a program that starts commands there gets EACCES).
  return { argv: [setpriv, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', ...argv], uid, env: { HOME: tmpdir() } };
}
