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
 * - **On a terminal** (spec 1.5): the start execs util-linux's `script`
 *   instead, which runs the supervisor on a new terminal and writes the
 *   terminal's bytes to `out`; `pid` names `script` (it writes the last
 *   bytes after the supervisor is gone), `supervisor` the supervisor (for
 *   signals, which it forwards to the terminal's whole session, and for
 *   resizes of its controlling terminal) and `terminal` the size
 *   last set (for a listing); `err` holds the reports alone.
 *
 * The files hold everything the command wrote (`replay-full`): a bounded
 * spool of segments is the design's next step, and until then a background
 * command's output costs its size in the sandbox's `/tmp`.
 *
 * The programs are `src/sh/background.sh`, `follower.sh` and `records.sh`,
 * embedded without their comments; a record's liveness (its supervisor's
 * pid and start time) is `src/sh/lib/alive.sh`.
 */
import { InvalidArgument } from '@sandstream/types';
import { BACKGROUND_SH, FOLLOWER_SH, RECORDS_SH } from './generated/programs.js';
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

/** `sh -c BACKGROUND sandstream-background DIR ARGV_JSON ACCOUNT TERMINAL supervisor-argv...` */
export const BACKGROUND: string = BACKGROUND_SH;

/** `sh -c FOLLOWER sandstream-follower DIR ID OUT_OFFSET ERR_OFFSET [WAIT_CS]`; exit 3: no such record. */
export const FOLLOWER: string = FOLLOWER_SH;

/**
 * `sh -c RECORDS sandstream-records list BASE`: a line `ID STATE TERMINAL ARGV_JSON` per record
 * (TERMINAL `COLSxROWS` or `-`).
 * `sh -c RECORDS sandstream-records show DIR ID TAIL`: `offsets OUT ERR` (the files' sizes with
 * TAIL=1, else 0 0), `account NAME`, `state STATE`, `terminal COLS ROWS` (on a terminal only),
 * `argv JSON`; exit 3 when there is no such record.
 * `sh -c RECORDS sandstream-records remove PATTERN`: removes `PATTERN*` records (exit 0 when none).
 */
export const RECORDS: string = RECORDS_SH;

const ID = /^[A-Za-z0-9_-]{8,64}$/;

/** Whether `id` can name a record (what a supervisor's id may be). */
export function isRecordId(id: string): boolean {
  return ID.test(id);
}

/** A background command's terminal (spec 1.5): its size, and util-linux's `script`, which holds it. */
export interface BackgroundTerminal {
  readonly cols: number;
  readonly rows: number;
  /** The path of `script` in the sandbox. */
  readonly script: string;
}

/** `word` quoted for a POSIX shell: in single quotes, each of its own as `'\''`. */
function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * The start of a background command: the wrapper around the supervisor's own argv. With
 * `terminal`, the supervisor's argv travels as one command line that `script` runs with `shell`
 * on a new terminal (see `src/sh/background.sh`).
 */
export function backgroundArgv(shell: string, dir: string, argv: readonly string[], account: string | undefined, supervisor: readonly string[], terminal?: BackgroundTerminal): string[] {
  if (!supervisor.includes(SUPERVISOR_NAME)) throw new TypeError('a background start wraps a supervisor argv');
  const start = [shell, '-c', BACKGROUND, BACKGROUND_NAME, dir, JSON.stringify(argv), account ?? ''];
  if (terminal === undefined) return [...start, '', ...supervisor];
  for (const path of [shell, terminal.script]) {
    if (!path.startsWith('/') || /\s/.test(path)) throw new TypeError(`a background terminal needs absolute paths without blanks, got ${JSON.stringify(path)}`);
  }
  return [...start, `${terminal.cols}x${terminal.rows} ${shell} ${terminal.script}`, `exec ${supervisor.map(shellQuote).join(' ')}`];
}

/**
 * A follower from `offsets`; with `waitMs`, of a supervisor's terminal record (spec 1.5): it waits
 * that long for the record, prints the supervisor's `PID START` line on standard output first, and
 * removes the record once it printed the last report.
 */
export function followerArgv(shell: string, dir: string, id: string, offsets: { readonly stdout: number; readonly stderr: number }, waitMs?: number): string[] {
  return [shell, '-c', FOLLOWER, FOLLOWER_NAME, dir, id, String(offsets.stdout), String(offsets.stderr), ...(waitMs === undefined ? [] : [String(Math.max(1, Math.ceil(waitMs / 10)))])];
}

export function recordsArgv(shell: string, ...args: string[]): string[] {
  return [shell, '-c', RECORDS, RECORDS_NAME, ...args];
}
