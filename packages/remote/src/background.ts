/**
 * Background commands on the remote kit (spec 1.2, ADR-0036): the record a
 * background command leaves in the sandbox, and the short programs that
 * make it, follow it, list and remove it. All are POSIX `sh` run by dash,
 * bash and busybox ash alike, with the tools found in the system's
 * directories.
 *
 * - **The record**: a directory `<base><id>` (default base
 *   `/tmp/.sandstream-`) holding `argv.json` (the command, one line),
 *   `account` (the account it runs as, empty for the default), `pid` (the
 *   supervisor's pid and start time) and `out` and `err`: the command's standard output, and
 *   its standard error with the supervisor's report frames in it, exactly
 *   as a foreground supervisor writes them to the backend's pipes. The
 *   directory and its small files are readable by every account; the output
 *   by the command's account only.
 * - **The start** (`sandstream-background`): makes the record, says `ok` on
 *   its standard error, then execs the unchanged supervisor with its
 *   streams on the record's files: the command no longer depends on any
 *   connection, and nothing is written to a pipe nobody reads.
 * - **A follower** (`sandstream-follower`): prints each file's bytes from an
 *   offset to its own standard output and error as they are written, so a
 *   driver reads a follower exactly as it reads a supervisor, and ends once
 *   the supervisor is gone and every byte was printed. Polls back off from
 *   1 ms to 100 ms.
 *
 * The files hold everything the command wrote (`replay-full`): a bounded
 * spool of segments is the design's next step, and until then a background
 * command's output costs its size in the sandbox's `/tmp`.
 */
import { InvalidArgument } from '@sandstream/types';
import { SUPERVISOR_NAME } from './supervisor.js';

/** Where records are made: a directory `${base}${id}` each. */
export const DEFAULT_RECORD_BASE = '/tmp/.sandstream-';

/**
 * An adapter's `recordBase` option, checked: an absolute path in the sandbox whose directory
 * exists there (the records are `${base}${id}`), without NUL or a line break, which the programs'
 * arguments and the listing's lines cannot carry. Undefined: {@link DEFAULT_RECORD_BASE}.
 *
 * Every handle on one environment must use the same base: a handle lists and attaches only the
 * records under its own. A real sandbox has its own `/tmp`; an emulator whose commands share the
 * host's gives each of its environments a base of its own, so two of them on one host stay apart.
 *
 * @example
 * ```ts
 * import { recordBaseOption } from '@sandstream/remote';
 * recordBaseOption(undefined); // '/tmp/.sandstream-'
 * recordBaseOption('/run/sandbox-tmp/.sandstream-'); // the same string
 * ```
 */
export function recordBaseOption(value: unknown, key = 'options.recordBase'): string {
  if (value === undefined) return DEFAULT_RECORD_BASE;
  if (typeof value !== 'string' || !value.startsWith('/') || /[\0\n\r]/.test(value) || value.endsWith('/')) {
    throw new InvalidArgument(key, 'must be an absolute path in the sandbox, the start of each record directory\'s name (not ending in "/", no NUL or line break)');
  }
  return value;
}

/** What the programs are called in their own argv. */
export const BACKGROUND_NAME = 'sandstream-background';
export const FOLLOWER_NAME = 'sandstream-follower';
export const RECORDS_NAME = 'sandstream-records';

/** Tools by the system's directories (the command's PATH is the caller's). */
const TOOLS = 't() { for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do [ -x "$d/$2" ] && { eval "$1=\\$d/\\$2"; return 0; }; done; return 1; }';

/**
 * Whether the supervisor of a record still runs (pid in S, its start time in J, id in I): the
 * process with that pid started at that time and is no zombie. The start time, not the argv, is
 * the identity: the supervisor is the start's shell after an exec, and while a process execs its
 * argv reads empty (the new image has none yet), which beside a second test suite had a follower
 * take a starting command for ended. A record without a start time (made by an earlier driver)
 * falls back to the argv: one word of it is the id (`-z`: the words are NUL-terminated, and
 * busybox's grep would stop at the first NUL of a line).
 */
const ALIVE = [
  'alive() {',
  '  [ -n "$S" ] || return 1',
  '  [ -n "$J" ] || { [ -r "/proc/$S/cmdline" ] && "$G" -qzxF -e "$I" "/proc/$S/cmdline" 2>/dev/null; return; }',
  // Field 3 of a stat line (the state) is the first after the name, which may hold ") "; field 22
  // (the start time) the twentieth.
  `  { IFS= read -r v < "/proc/$S/stat"; } 2>/dev/null && set -- \${v##*') '} && case $1 in Z|X|x) return 1 ;; esac && [ "\${20}" = "$J" ]`,
  '}',
].join('\n');

/** `sh -c BACKGROUND sandstream-background DIR ARGV_JSON ACCOUNT supervisor-argv...` */
export const BACKGROUND = [
  'D=$1 A=$2 U=$3; shift 3',
  // Output files for the command's account alone; the rest readable by every account (a listing).
  'umask 077',
  // The answer goes to standard error: a backend may hold standard output back until the end or
  // until standard error speaks (Docker's adapter does, to tell its runtime's refusals).
  'mkdir "$D" 2>/dev/null || { echo nospool >&2; exit 127; }',
  // This shell's start time (field 22 of its stat line), which the supervisor keeps across the
  // exec: with the pid, the identity a follower and a listing check (ALIVE). In a function, so
  // the positional parameters stay the supervisor's argv.
  `st() { set -- \${1##*') '}; J=\${20}; }; J=; { IFS= read -r l < /proc/$$/stat; } && st "$l"`,
  // argv.json last, and whole (a rename): a record with it is complete, for a listing and an attach.
  `{ printf '%s\\n' "$U" > "$D/account" && echo "$$ $J" > "$D/pid" && : > "$D/out" && : > "$D/err" && printf '%s\\n' "$A" > "$D/argv.new" && chmod 755 "$D" && chmod 644 "$D/account" "$D/pid" "$D/argv.new" && mv -f "$D/argv.new" "$D/argv.json"; } 2>/dev/null || { echo nospool >&2; exit 127; }`,
  'echo ok >&2',
  // The supervisor keeps this pid; its streams are the record's files from here on.
  'exec "$@" </dev/null >"$D/out" 2>"$D/err"',
].join('\n');

/** `sh -c FOLLOWER sandstream-follower DIR ID OUT_OFFSET ERR_OFFSET`; exit 3: no such record. */
export const FOLLOWER = [
  'D=$1 I=$2 O=$3 E=$4',
  TOOLS,
  't Z sleep && t G grep && t W wc && t T tail && t H head || exit 2',
  '{ read -r S J < "$D/pid"; } 2>/dev/null || exit 3',
  ALIVE,
  // r FILE OFFSET: prints the bytes of FILE past OFFSET that are there now; N is its new size.
  'r() { N=$("$W" -c < "$1") || return 1; [ "$N" -gt "$2" ] || return 0; c=1; "$T" -c +$(($2 + 1)) "$1" | "$H" -c $((N - $2)); }',
  'c= d=0.001 k=0',
  'while :; do',
  // Alive before the reads: once it is seen gone, the reads after it have every byte it wrote.
  '  a=; alive && a=1',
  '  r "$D/out" "$O" || exit 4; O=$N',
  '  r "$D/err" "$E" >&2 || exit 4; E=$N',
  '  [ -n "$a" ] || exit 0',
  '  if [ -n "$c" ]; then c= d=0.001 k=0; else k=$((k + 1)); case $k in 4) d=0.002 ;; 8) d=0.005 ;; 12) d=0.01 ;; 16) d=0.02 ;; 20) d=0.05 ;; 24) d=0.1 ;; esac; fi',
  '  "$Z" "$d"',
  'done',
].join('\n');

/**
 * `sh -c RECORDS sandstream-records list BASE`: a line `ID STATE ARGV_JSON` per record.
 * `sh -c RECORDS sandstream-records show DIR ID TAIL`: `offsets OUT ERR` (the files' sizes with
 * TAIL=1, else 0 0), `account NAME`, `state STATE`, `argv JSON`; exit 3 when there is no such
 * record.
 * `sh -c RECORDS sandstream-records remove PATTERN`: removes `PATTERN*` records (exit 0 when none).
 */
export const RECORDS = [
  TOOLS,
  't G grep && t W wc || exit 2',
  ALIVE,
  'case $1 in',
  // A record removed as it is read is left out: one line each, whole, or none.
  '  list) B=$2; for x in "$B"*; do { IFS= read -r a < "$x/argv.json"; } 2>/dev/null && [ -n "$a" ] || continue; I=${x#"$B"}; { read -r S J < "$x/pid"; } 2>/dev/null || S=; s=ended; alive && s=running; printf \'%s %s %s\\n\' "$I" "$s" "$a"; done ;;',
  '  show) D=$2 I=$3',
  '    [ -f "$D/argv.json" ] || exit 3',
  '    { read -r S J < "$D/pid"; } 2>/dev/null || S=; s=ended; alive && s=running',
  '    O=0 E=0; [ "$4" = 1 ] && { O=$("$W" -c < "$D/out") && E=$("$W" -c < "$D/err") || exit 4; }',
  '    printf \'offsets %s %s\\n\' $O $E; printf \'account %s\\n\' "$(cat "$D/account")"; printf \'state %s\\n\' "$s"; printf \'argv \'; cat "$D/argv.json"',
  '    exit 0 ;;',
  '  remove) for x in "$2"*; do [ -d "$x" ] && rm -rf -- "$x"; done; exit 0 ;;',
  '  *) exit 2 ;;',
  'esac',
].join('\n');

const ID = /^[A-Za-z0-9_-]{8,64}$/;

/** Whether `id` can name a record (what a supervisor's id may be). */
export function isRecordId(id: string): boolean {
  return ID.test(id);
}

/** The start of a background command: the wrapper around the supervisor's own argv. */
export function backgroundArgv(shell: string, dir: string, argv: readonly string[], account: string | undefined, supervisor: readonly string[]): string[] {
  if (!supervisor.includes(SUPERVISOR_NAME)) throw new TypeError('a background start wraps a supervisor argv');
  return [shell, '-c', BACKGROUND, BACKGROUND_NAME, dir, JSON.stringify(argv), account ?? '', ...supervisor];
}

export function followerArgv(shell: string, dir: string, id: string, offsets: { readonly stdout: number; readonly stderr: number }): string[] {
  return [shell, '-c', FOLLOWER, FOLLOWER_NAME, dir, id, String(offsets.stdout), String(offsets.stderr)];
}

export function recordsArgv(shell: string, ...args: string[]): string[] {
  return [shell, '-c', RECORDS, RECORDS_NAME, ...args];
}
