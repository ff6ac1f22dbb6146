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
 * - It reports `exit` as soon as the command ended, `gone` once no live
 *   process of the command's group or session is left, and then exits
 *   with the command's status (dying of the same signal), so a command
 *   that ends by itself costs no request beyond the backend's own.
 */

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
 * The supervisor: `sh -c SUPERVISOR sandstream-supervisor ID argv...`.
 * Tools it needs besides the shell: `/proc`, `setsid` (util-linux or
 * busybox) and `sleep` with fractions of a second (coreutils or busybox),
 * found in the standard system directories whatever the command's PATH;
 * GNU `env` with `--default-signal` (coreutils 8.31 and later) when the
 * command is to receive INT and QUIT (see the `start` report).
 */
export const SUPERVISOR = [
  'I=$1; shift',
  // fd 9: the backend's standard error, for reports; fd 8: its standard input, for the command
  // (an asynchronous list gets /dev/null without an explicit redirection). The shell's own
  // complaints (a `kill` of a gone group, bash's job notices) go nowhere.
  'exec 9>&2 8<&0 2>/dev/null',
  "r() { printf '\\036sandstream:%s %s\\n' \"$I\" \"$1\" >&9; }",
  // Its tools by the system's directories: the command's PATH is the caller's.
  't() { for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do [ -x "$d/$2" ] && { eval "$1=\\$d/\\$2"; return 0; }; done; return 1; }',
  "t X setsid || { r 'noexec ENOENT setsid'; exit 127; }",
  "t Z sleep || { r 'noexec ENOENT sleep'; exit 127; }",
  // A shell without job control starts an asynchronous list with INT and QUIT ignored, and the
  // command would inherit that; GNU env resets them as it execs the command.
  'R=default; t E env && "$E" --default-signal=INT,QUIT true || { E= R=ignored; }',
  // argv[0] must be executable: a missing program is a report, not exit status 127.
  'c=$1',
  'case $c in',
  "  */*) [ -e \"$c\" ] || { r 'noexec ENOENT'; exit 127; }; [ -f \"$c\" ] && [ -x \"$c\" ] || { r 'noexec EACCES'; exit 127; } ;;",
  '  *) f=; IFS=:; for d in $PATH; do [ -f "${d:-.}/$c" ] && [ -x "${d:-.}/$c" ] && { f=1; break; }; done; unset IFS',
  "     [ -n \"$f\" ] || { r 'noexec ENOENT'; exit 127; } ;;",
  'esac',
  // env(1) would take a program name holding `=` for an assignment.
  'case $c in *=*) E= R=ignored ;; esac',
  // The fields of a stat line after the command's name, which may hold spaces and parentheses.
  "st() { set -- ${1##*') '}; S1=$1 S2=$2 S3=$3 S4=$4 S20=${20} S50=${50}; }",
  'SANDSTREAM_COMMAND=$I; export SANDSTREAM_COMMAND',
  // H, the holder: forks the command, then becomes a `sleep` that never reaps it.
  '(',
  '  (',
  // The command's own pid (a subshell's $$ is its parent's) and start time, reported before
  // it can write a byte; setsid, which does not fork for a process that leads no group,
  // makes that pid its session and group.
  "    { IFS= read -r l < /proc/self/stat; } && st \"$l\" && p=${l%% *} && printf '\\036sandstream:%s start %s %s %s %s\\n' \"$I\" \"$p\" \"$p\" \"$S20\" \"$R\" >&2",
  // Not before the holder is a `sleep`: a shell there could reap the command, and its status.
  '    { IFS= read -r m < /proc/self/comm; } && while { IFS= read -r h < "/proc/$S2/comm"; } && [ "$h" = "$m" ]; do :; done',
  '    [ -n "$E" ] && exec "$X" "$E" --default-signal=INT,QUIT -- "$@"',
  '    exec "$X" "$@"',
  '  ) <&8 2>&9 8<&- 9>&- &',
  '  exec "$Z" 2147483647 <&- >/dev/null 8<&- 9>&-',
  ') &',
  'H=$! C= Q= d=0.001',
  // A trap only records the signal: the main loop forwards it, so a handler never runs a scan
  // in the middle of another. `wait` returns at once when a trapped signal arrives.
  `for s in ${FORWARDED_SIGNALS.join(' ')}; do trap "Q=\\"\\$Q $s\\"" "$s"; done`,
  // A handler, not an ignore: the command must not inherit an ignored SIGPIPE.
  'trap : PIPE',
  // Polls back off from 1 ms to 100 ms: a short command is seen ending at once, a long one
  // costs ten `sleep`s a second.
  'nap() { "$Z" "$d" & wait $!; case $d in 0.001) d=0.002 ;; 0.002) d=0.005 ;; 0.005) d=0.01 ;; 0.01) d=0.02 ;; 0.02) d=0.05 ;; 0.05) d=0.1 ;; esac; }',
  // scan SIG: sends SIG to live members of the session outside the group.
  // scan '': true while a live process of the command's group or session exists.
  'scan() {',
  '  for f in /proc/[0-9]*/stat; do',
  '    { IFS= read -r l < "$f"; } 2>/dev/null || continue; st "$l"',
  '    case $S1 in Z|X|x) continue ;; esac',
  '    if [ -n "$1" ]; then [ "$S4" = "$C" ] && [ "$S3" != "$C" ] && kill -s "$1" "${l%% *}"',
  '    elif [ "$S3" = "$C" ] || [ "$S4" = "$C" ]; then return 0; fi',
  '  done',
  '  return 1',
  '}',
  // Taken and cleared in one command, which a trap cannot split.
  'flush() {',
  '  [ -n "$C" ] || return 0',
  '  q=$Q Q=',
  // Before setsid ran, the command leads no group yet: its pid alone.
  '  for s in $q; do kill -s "$s" -- "-$C" || kill -s "$s" "$C"; scan "$s"; done',
  '  return 0',
  '}',
  // The holder's one child.
  'kid() {',
  '  { IFS= read -r C _ < "/proc/$H/task/$H/children"; } && [ -n "$C" ] && return 0',
  '  for f in /proc/[0-9]*/stat; do { IFS= read -r l < "$f"; } || continue; st "$l"; [ "$S2" = "$H" ] && { C=${l%% *}; return 0; }; done',
  '  C=; return 1',
  '}',
  // 0: a zombie, its wait status in W; 1: running; 2: gone (reaped by someone else).
  'zst() { { IFS= read -r l < "/proc/$C/stat"; } || return 2; st "$l"; [ "$S1" = Z ] || return 1; W=$S50; }',
  "until kid; do kill -0 \"$H\" || { r 'exit unknown'; r gone; exit 255; }; nap; done",
  'W=',
  'while :; do flush; zst; z=$?; [ "$z" = 0 ] && break; [ "$z" = 2 ] && { W=; break; }; nap; done',
  'case $W in',
  "  '') K=unknown; r 'exit unknown' ;;",
  '  *) if [ $((W & 127)) = 0 ]; then K=code V=$((W >> 8 & 255)); r "exit code $V"',
  "     else K=signal V=$((W & 127)) N=$(kill -l $((W & 127))); r \"exit signal $V $N$( [ $((W & 128)) = 0 ] || echo ' core')\"; fi ;;",
  'esac',
  // Signals still reach the group while holders live on after the command's end.
  "while flush && scan ''; do nap; done",
  // The command's zombie goes to init (or the nearest subreaper) with its holder.
  'kill -s KILL "$H"; wait "$H"',
  'r gone',
  'case $K in',
  '  code) exit "$V" ;;',
  '  signal) trap - "$N"; kill -s "$N" $$; exit $((128 + V)) ;;',
  'esac',
  'exit 255',
].join('\n');

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
  /** The shell that runs the supervisor; default `/bin/sh`. */
  readonly shell?: string;
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
 * // ['/bin/sh', '-c', SUPERVISOR, 'sandstream-supervisor', id, 'printf', '%s\n', 'a b']
 * ```
 */
export function supervisorArgv(command: SupervisorCommand): string[] {
  if (!ID.test(command.id)) {
    throw new TypeError(`supervisor id must be 8-64 of [A-Za-z0-9_-], got ${JSON.stringify(command.id)}`);
  }
  if (command.argv.length === 0 || command.argv[0] === '') {
    throw new TypeError('supervisor argv must name a program');
  }
  return [command.shell ?? '/bin/sh', '-c', SUPERVISOR, SUPERVISOR_NAME, command.id, ...command.argv];
}
