/**
 * The helper commands the driver runs in the sandbox when the supervisor
 * cannot do the job itself: signals it cannot catch (KILL, STOP) or that
 * the backend cannot deliver to it, and the sweep by tag that finds what
 * escaped the supervisor or outlived it (ADR-0033).
 *
 * `sh -c HELPER sandstream-helper signal SIG PGID START`: sends SIG to the
 * command's process group, unless the group number was taken again (the
 * process with that pid started at another time than START, the command's
 * start time: the kernel gives a number out again only once nothing of
 * its group is left, so the command's group is gone).
 *
 * `sh -c HELPER sandstream-helper kill PGID START ID`: SIGKILL to the
 * group (as above), then once to every process tagged with ID, without
 * waiting for them to die. The supervisor is not tagged (it exports the tag
 * to the command), so it lives on to report `gone` once its group and
 * session are empty; what left the session is the close-time sweep's.
 *
 * `sh -c HELPER sandstream-helper abandon ID`: a start whose outcome is
 * unknown: SIGKILL to the supervisor whose argv holds ID (it may not have
 * forked yet), then the sweep of ID and of its holder (`ID-holder`).
 *
 * `sh -c HELPER sandstream-helper sweep PATTERN [LEASE_PREFIX FILE...]`: SIGKILL, once, to every
 * process whose environment holds `SANDSTREAM_COMMAND=` followed by PATTERN
 * (a basic regular expression over one variable: `ID$` for one command,
 * `PREFIX-` for every command of one sandbox), then removes the FILEs (the
 * handle's owner leases, at close) and the leases under LEASE_PREFIX that
 * lapsed (owners that died without closing). Needs `grep -z` (GNU or busybox).
 *
 * `sh -c HELPER sandstream-helper lease FILE LAPSE_CS [LEASE_PREFIX]`: renews
 * an owner lease (spec 1.4, `owner-lease.ts`): FILE then holds the sandbox's
 * uptime in centiseconds plus LAPSE_CS, the moment the renewal lapses; then
 * the leases under LEASE_PREFIX that lapsed are removed.
 *
 * `abandon` repeats its sweep until nothing is left (exit 0) or 50 rounds
 * passed (exit 1): a start it races may still be forking. A zombie's
 * environment reads empty, so zombies count as gone.
 */
import { HELPER_SH } from './generated/programs.js';

/** What the helper is called in its own argv. */
export const HELPER_NAME = 'sandstream-helper';

// The program is src/sh/helper.sh, embedded without its comments.
export const HELPER: string = HELPER_SH;

/** The command's identity, as its `start` report gave it. */
export interface GroupIdentity {
  readonly pgid: number;
  readonly startTime: string;
}

/** `signal`: one signal (a name without `SIG`, e.g. `TERM`) to the command's group, guarded by its start time. */
export function groupSignalArgv(shell: string, signal: string, group: GroupIdentity): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'signal', signal, String(group.pgid), group.startTime];
}

/**
 * `process`: one signal (a name without `SIG`) to one process, guarded by its start time: a
 * supervisor on a terminal (spec 1.5), which forwards it to the terminal's whole session.
 */
export function processSignalArgv(shell: string, signal: string, pid: number, startTime: string): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'process', signal, String(pid), startTime];
}

/**
 * `record`: one signal (a name without `SIG`) to the supervisor of a background command on a
 * terminal, named by its record `dir` (spec 1.5), guarded by its start time; exit 3 while the
 * record names none yet.
 */
export function recordSignalArgv(shell: string, signal: string, dir: string): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'record', signal, dir];
}

/**
 * `resize`: the terminal of the background command whose record is `dir` set to `cols` by `rows`
 * (its foreground group gets SIGWINCH), and the record's size last set with it; exit 3 once its
 * supervisor is gone.
 */
export function recordResizeArgv(shell: string, dir: string, cols: number, rows: number): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'resize', dir, String(cols), String(rows)];
}

/** `kill`: SIGKILL to the group, then to everything tagged with the command's id. */
export function treeKillArgv(shell: string, group: GroupIdentity, id: string): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'kill', String(group.pgid), group.startTime, id];
}

/**
 * `sweep`: SIGKILL to everything tagged with `id` exactly, or with any id starting with `prefix`
 * (`{ prefix }`); then, with `leases`, the handle's own lease files go, and every lease under
 * `leases.prefix` that lapsed (its owner died without closing).
 */
export function sweepArgv(shell: string, tag: string | { readonly prefix: string }, leases?: { readonly prefix: string; readonly own: readonly string[] }): string[] {
  const pattern = typeof tag === 'string' ? `${tag}$` : tag.prefix;
  if (!/^[A-Za-z0-9_-]+\$?$/.test(pattern)) throw new TypeError(`a sweep pattern is an id or an id prefix, got ${JSON.stringify(pattern)}`);
  return [shell, '-c', HELPER, HELPER_NAME, 'sweep', pattern, ...(leases === undefined ? [] : [leases.prefix, ...leases.own])];
}

/** `abandon`: SIGKILL to the supervisor of a start whose outcome is unknown, and to everything tagged with its id. */
export function abandonArgv(shell: string, id: string): string[] {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new TypeError(`an id, got ${JSON.stringify(id)}`);
  return [shell, '-c', HELPER, HELPER_NAME, 'abandon', id];
}

/**
 * `lease`: renews the owner lease in `file` for `lapseMs` from now on the sandbox's clock; with
 * `lapsedPrefix`, also removes the leases under it that lapsed (owners that died without closing).
 */
export function leaseArgv(shell: string, file: string, lapseMs: number, lapsedPrefix?: string): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'lease', file, String(Math.ceil(lapseMs / 10)), ...(lapsedPrefix === undefined ? [] : [lapsedPrefix])];
}

