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
 * `sh -c HELPER sandstream-helper sweep PATTERN [FILE...]`: SIGKILL, once, to every
 * process whose environment holds `SANDSTREAM_COMMAND=` followed by PATTERN
 * (a basic regular expression over one variable: `ID$` for one command,
 * `PREFIX-` for every command of one sandbox), then removes the FILEs (the
 * handle's owner leases, at close). Needs `grep -z` (GNU or busybox).
 *
 * `sh -c HELPER sandstream-helper lease FILE LAPSE_CS`: renews an owner
 * lease (spec 1.4, `owner-lease.ts`): FILE then holds the sandbox's uptime
 * in centiseconds plus LAPSE_CS, the moment the renewal lapses.
 *
 * `abandon` repeats its sweep until nothing is left (exit 0) or 50 rounds
 * passed (exit 1): a start it races may still be forking. A zombie's
 * environment reads empty, so zombies count as gone.
 */
import { SUPERVISOR_NAME, TAG_VARIABLE } from './supervisor.js';

/** What the helper is called in its own argv. */
export const HELPER_NAME = 'sandstream-helper';

export const HELPER = [
  'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  'reused() { [ -n "$t" ] && { IFS= read -r l < "/proc/$p/stat"; } 2>/dev/null && set -- ${l##*") "} && [ "${20}" != "$t" ]; }',
  'group() { s=$1 p=$2 t=$3; reused || kill -s "$s" -- "-$p" 2>/dev/null; return 0; }',
  // once PATTERN: SIGKILL to what carries the tag now, without waiting for it to die.
  `once() { for f in $(grep -lz "^${TAG_VARIABLE}=$1" /proc/[0-9]*/environ 2>/dev/null); do f=\${f#/proc/}; kill -s KILL "\${f%/environ}" 2>/dev/null; done; }`,
  'sweep() {',
  '  i=0',
  `  while l=$(grep -lz "^${TAG_VARIABLE}=$1" /proc/[0-9]*/environ 2>/dev/null); [ -n "$l" ]; do`,
  '    for f in $l; do f=${f#/proc/}; kill -s KILL "${f%/environ}" 2>/dev/null; done',
  '    i=$((i + 1)); [ "$i" -lt 50 ] || exit 1',
  '    sleep 0.01',
  '  done',
  '}',
  'case $1 in',
  '  signal) group "$2" "$3" "$4" ;;',
  // The supervisor lives on and reports `gone` once its group and session are empty: the kill
  // itself waits for nothing (under load, waiting here for every death outran the request bound).
  '  kill) group KILL "$2" "$3"; once "$4\\$" ;;',
  // At close: once, without waiting (close() is bounded; what got SIGKILL is as good as gone).
  // The files after the pattern are the handle's owner leases, gone with its commands.
  '  sweep) once "$2"; shift 2; [ "$#" = 0 ] || rm -f -- "$@" ;;',
  // The supervisor's argv holds its name and the id as whole words.
  `  abandon) for f in $(grep -lzx -e "$2" /proc/[0-9]*/cmdline 2>/dev/null); do grep -qzx ${SUPERVISOR_NAME} "$f" 2>/dev/null && { f=\${f#/proc/}; kill -s KILL "\${f%/cmdline}" 2>/dev/null; }; done; sweep "$2" ;;`,
  // The uptime's fraction without a leading 0, which would read as octal; one write(2) of a line.
  "  lease) IFS=' .' read -r s c _ < /proc/uptime; c=${c#0}; printf '%s\\n' $((s * 100 + c + $3)) > \"$2\" || exit 1 ;;",
  '  *) exit 2 ;;',
  'esac',
  'exit 0',
].join('\n');

/** The command's identity, as its `start` report gave it. */
export interface GroupIdentity {
  readonly pgid: number;
  readonly startTime: string;
}

/** `signal`: one signal (a name without `SIG`, e.g. `TERM`) to the command's group, guarded by its start time. */
export function groupSignalArgv(shell: string, signal: string, group: GroupIdentity): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'signal', signal, String(group.pgid), group.startTime];
}

/** `kill`: SIGKILL to the group, then to everything tagged with the command's id. */
export function treeKillArgv(shell: string, group: GroupIdentity, id: string): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'kill', String(group.pgid), group.startTime, id];
}

/** `sweep`: SIGKILL to everything tagged with `id` exactly, or with any id starting with `prefix` (`{ prefix }`); then `remove` goes. */
export function sweepArgv(shell: string, tag: string | { readonly prefix: string }, remove: readonly string[] = []): string[] {
  const pattern = typeof tag === 'string' ? `${tag}$` : tag.prefix;
  if (!/^[A-Za-z0-9_-]+\$?$/.test(pattern)) throw new TypeError(`a sweep pattern is an id or an id prefix, got ${JSON.stringify(pattern)}`);
  return [shell, '-c', HELPER, HELPER_NAME, 'sweep', pattern, ...remove];
}

/** `abandon`: SIGKILL to the supervisor of a start whose outcome is unknown, and to everything tagged with its id. */
export function abandonArgv(shell: string, id: string): string[] {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new TypeError(`an id, got ${JSON.stringify(id)}`);
  return [shell, '-c', HELPER, HELPER_NAME, 'abandon', id];
}

/** `lease`: renews the owner lease in `file` for `lapseMs` from now on the sandbox's clock. */
export function leaseArgv(shell: string, file: string, lapseMs: number): string[] {
  return [shell, '-c', HELPER, HELPER_NAME, 'lease', file, String(Math.ceil(lapseMs / 10))];
}

