/**
 * The in-sandbox supervisor (ADR-0033): a POSIX `sh` program, run by dash,
 * bash and busybox ash alike, that an exec-style backend starts in place of
 * the command.
 *
 * - It starts argv exactly (the words are never interpreted by a shell) as
 *   the leader of a session and process group of its own (`setsid`), with
 *   `SANDSTREAM_COMMAND=<id>` in its environment, which every process the
 *   command starts inherits, whatever group or session it moves to.
 * - The command's standard input, output and error are the supervisor's
 *   own, untouched: the backend's pipes stay open while anything of the
 *   tree holds them, and no byte is copied. The supervisor's reports go to
 *   standard error as frames `\x1esandstream:<id> <report>\n` (see
 *   `reports.ts`), each one `write(2)` of under 4096 bytes, so a frame is
 *   never torn by the command's own writes and can be cut out exactly.
 * - It forwards HUP, INT, QUIT, TERM, USR1, USR2, ALRM, WINCH, CONT, TSTP,
 *   TTIN and TTOU to the command's process group, and to members of its
 *   session that moved to another group.
 * - The command's parent is not a shell but a `sleep` that never reaps it,
 *   so the supervisor reads the exact wait status of the command's zombie
 *   (field 52 of `/proc/<pid>/stat`, Linux 3.5 and later): death by signal n
 *   and exit status 128+n are told apart, which `$?` of any shell cannot
 *   do. The zombie also keeps the command's pid, and so its group number,
 *   from being taken again while the supervisor runs.
 * - The command's end is an event: the command, and only what it starts,
 *   holds fd 7, the write end of a pipe whose reader (the waker, a fork of
 *   the supervisor) sees end-of-file once nothing holds it any more and
 *   sends the supervisor SIGPIPE, which cuts its wait short. Polls, backing
 *   off from 1 ms, stay the fallback, for a command that closed fd 7 early
 *   (the call comes at once and is spent) or left something running that
 *   holds it (the call comes late): up to 500 ms apart while the call may
 *   still come, up to 100 ms once it came. fd 7 is the one descriptor the
 *   command gets beyond its standard streams.
 * - A foreground command's supervisor watches its owner lease (spec 1.4,
 *   `owner-lease.ts`): a file the host rewrites while its commands run.
 *   Once the lease lapsed on the sandbox's clock (the owner died, or its
 *   link is gone), it reports `lost` and gives the tree the termination
 *   sequence itself: SIGTERM and SIGCONT, SIGKILL after the grace period,
 *   and the sweep of the tag. A background command has no lease.
 * - It reports `exit` as soon as the command ended, `held` when its first
 *   look then finds live processes of the command's group or session,
 *   `gone` once none is left, and then exits
 *   with the command's status (dying of the same signal), so a command
 *   that ends by itself costs no request beyond the backend's own.
 */
import { SUPERVISOR_SH } from './generated/programs.js';

/** The variable every process of a supervised tree carries; its value is the command's id. */
export const TAG_VARIABLE = 'SANDSTREAM_COMMAND';

/** What the supervisor is called in its own argv (`$0`), so it can be told in a process list. */
export const SUPERVISOR_NAME = 'sandstream-supervisor';

/** Signals the supervisor catches and forwards to the tree. KILL and STOP cannot be caught. */
export const FORWARDED_SIGNALS = Object.freeze([
  'HUP',
  'INT',
  'QUIT',
  'TERM',
  'USR1',
  'USR2',
  'ALRM',
  'WINCH',
  'CONT',
  'TSTP',
  'TTIN',
  'TTOU',
] as const);

/**
 * The supervisor: `sh -c SUPERVISOR sandstream-supervisor ID N HOME
 * LEASE TTY prefix... argv...` (see {@link supervisorArgv}).
 * Tools it needs besides the shell: `/proc`, `setsid` (util-linux or
 * busybox) and `sleep` with fractions of a second (coreutils or busybox),
 * found in the standard system directories whatever the command's PATH;
 * GNU `env` with `--default-signal` (coreutils 8.31 and later) when the
 * command is to receive INT and QUIT (see the `start` report).
 * The program is `src/sh/supervisor.sh`, embedded without its comments.
 */
export const SUPERVISOR: string = SUPERVISOR_SH;

/**
 * The owner lease a foreground command's supervisor watches (spec 1.4, the
 * owner-loss rule; see `owner-lease.ts`): the host rewrites `file` while its
 * commands run, and once `lapseMs` passed on the sandbox's clock since the
 * latest renewal the supervisor gives the tree the termination sequence
 * (SIGTERM and SIGCONT, SIGKILL after `graceMs`) and reports `lost`.
 */
export interface SupervisorLease {
  /** An absolute path in the sandbox, without NUL or a line break, writable by the command's account. */
  readonly file: string;
  readonly lapseMs: number;
  readonly graceMs: number;
}

/** What {@link supervisorArgv} takes. */
export interface SupervisorCommand {
  /**
   * The command's id: the value of {@link TAG_VARIABLE} and the mark of
   * every report frame. Letters, digits, `-` and `_` only, 8 to 64 of them;
   * make it unguessable (a UUID) so a command's own output cannot forge a
   * frame by chance.
   */
  readonly id: string;
  /** The command's argv, passed as words, never through a shell. */
  readonly argv: readonly string[];
  /**
   * Words exec'd in front of argv: wrappers that exec the command in turn
   * (`env NAME=VALUE...`, `prlimit --cpu=2:3 --`), so pid, group and status
   * stay the command's. Each word that is an absolute path and holds no `=`
   * must be an executable file (else a `noexec ENOENT <path>` report);
   * argv[0] is checked after them as the command.
   */
  readonly prefix?: readonly string[] | undefined;
  /** Start in `$HOME` if it can, else where the backend started the supervisor (default false). */
  readonly home?: boolean | undefined;
  /** The shell that runs the supervisor; default `/bin/sh`. */
  readonly shell?: string;
  /** The owner lease to watch; none (a background command) outlives its owner. */
  readonly lease?: SupervisorLease | undefined;
  /**
   * Spec 1.5, the terminal mode: the backend starts the supervisor on a terminal (it leads the
   * terminal's session). The supervisor keeps the session and starts the command in a process
   * group of its own that it makes the terminal's foreground group; its reports go to
   * `record`'s `err` file (a directory it makes, with `pid` and an empty `out`), which a
   * follower prints (`sandstream-follower`, see the README), not to the terminal.
   */
  readonly terminal?: SupervisorTerminal | undefined;
}

/** The terminal mode of {@link SupervisorCommand}. */
export interface SupervisorTerminal {
  /** The directory the supervisor makes for its reports: an absolute path without NUL or a line break, not there yet. */
  readonly record: string;
  /**
   * The terminal's size, which the supervisor sets with `stty` (where the sandbox has it) before
   * the command starts: a backend may size the terminal late, or not at all (dockerd before API
   * 1.42 ignores an exec's `ConsoleSize`). Undefined: the backend's size stands.
   */
  readonly size?: { readonly cols: number; readonly rows: number } | undefined;
  /**
   * The record is a background command's, made already (`sandstream-background`), and the program
   * that holds the terminal (util-linux's `script`) wrote its own pid there and writes `out`: the
   * supervisor writes its identity to `supervisor`, for signals and resizes (the terminal is its
   * controlling terminal; spec 1.5, a background command on a terminal).
   */
  readonly inRecord?: boolean | undefined;
}

/** The terminal's word in the supervisor's argv: `SHELL SIZE OWN DIR` (the shell runs the job-control holder; SIZE `COLSxROWS` or `-`; OWN the record's file that names the supervisor, `pid` or `supervisor`). */
function terminalWord(shell: string, terminal: SupervisorTerminal | undefined): string {
  if (terminal === undefined) return '';
  if (!terminal.record.startsWith('/') || /[\0\n\r]/.test(terminal.record)) throw new TypeError(`a terminal's record is an absolute path without NUL or a line break, got ${JSON.stringify(terminal.record)}`);
  if (/[\s]/.test(shell)) throw new TypeError(`on a terminal the shell's path holds no blank, got ${JSON.stringify(shell)}`);
  const size = terminal.size;
  if (size !== undefined && !(Number.isInteger(size.cols) && Number.isInteger(size.rows) && size.cols > 0 && size.rows > 0)) throw new TypeError(`a terminal's size is whole numbers above 0, got ${JSON.stringify(size)}`);
  return `${shell} ${size === undefined ? '-' : `${size.cols}x${size.rows}`} ${terminal.inRecord === true ? 'supervisor' : 'pid'} ${terminal.record}`;
}

/** A lease's word in the supervisor's argv: `LAPSE GRACE FILE`, the times in centiseconds, rounded up. */
function leaseWord(lease: SupervisorLease | undefined): string {
  if (lease === undefined) return '';
  if (!lease.file.startsWith('/') || /[\0\n\r]/.test(lease.file)) throw new TypeError(`a lease file is an absolute path without NUL or a line break, got ${JSON.stringify(lease.file)}`);
  for (const [name, ms] of [['lapseMs', lease.lapseMs], ['graceMs', lease.graceMs]] as const) {
    if (!Number.isFinite(ms) || ms < 0) throw new TypeError(`a lease's ${name} is a finite number of ms, got ${ms}`);
  }
  return `${Math.ceil(lease.lapseMs / 10)} ${Math.ceil(lease.graceMs / 10)} ${lease.file}`;
}

const ID = /^[A-Za-z0-9_-]{8,64}$/;

/**
 * The argv a backend starts in place of the command.
 *
 * @example
 * ```ts
 * import { randomUUID } from 'node:crypto';
 * import { supervisorArgv } from '@sandstream/remote';
 *
 * const argv = supervisorArgv({ id: randomUUID(), argv: ['printf', '%s\n', 'a b'] });
 * // ['/bin/sh', '-c', SUPERVISOR, 'sandstream-supervisor', id, '0', '0', '', '', 'printf', '%s\n', 'a b']
 * ```
 */
export function supervisorArgv(command: SupervisorCommand): string[] {
  if (!ID.test(command.id)) {
    throw new TypeError(`supervisor id must be 8-64 of [A-Za-z0-9_-], got ${JSON.stringify(command.id)}`);
  }
  if (command.argv.length === 0 || command.argv[0] === '') {
    throw new TypeError('supervisor argv must name a program');
  }
  const prefix = command.prefix ?? [];
  const shell = command.shell ?? '/bin/sh';
  return [shell, '-c', SUPERVISOR, SUPERVISOR_NAME, command.id, String(prefix.length), command.home === true ? '1' : '0', leaseWord(command.lease), terminalWord(shell, command.terminal), ...prefix, ...command.argv];
}
