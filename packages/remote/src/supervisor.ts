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
 * LEASE prefix... argv...` (see {@link supervisorArgv}).
 * Tools it needs besides the shell: `/proc`, `setsid` (util-linux or
 * busybox) and `sleep` with fractions of a second (coreutils or busybox),
 * found in the standard system directories whatever the command's PATH;
 * GNU `env` with `--default-signal` (coreutils 8.31 and later) when the
 * command is to receive INT and QUIT (see the `start` report).
 */
export const SUPERVISOR = [
  // I: the id; n: how many words of argv are a prefix (wrappers that exec the command in turn);
  // h: 1 to start in $HOME if it can (else stay where the backend started it); the owner lease
  // (empty: none), as `LAPSE GRACE FILE` (see owner below).
  'I=$1 n=$2 h=$3 lease=$4; shift 4',
  '[ "$h" = 1 ] && { cd "$HOME" 2>/dev/null || cd /; }',
  // fd 9: the backend's standard error, for reports; fd 8: its standard input, for the command
  // (an asynchronous list gets /dev/null without an explicit redirection); fd 6: its standard
  // output, for the command (the pipeline below takes the holder's). The shell's own complaints
  // (a `kill` of a gone group, bash's job notices) go nowhere.
  'exec 9>&2 8<&0 6>&1 2>/dev/null',
  "r() { printf '\\036sandstream:%s %s\\n' \"$I\" \"$1\" >&9; }",
  // Its tools by the system's directories: the command's PATH is the caller's.
  't() { for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do [ -x "$d/$2" ] && { eval "$1=\\$d/\\$2"; return 0; }; done; return 1; }',
  "t X setsid || { r 'noexec ENOENT setsid'; exit 127; }",
  "t Z sleep || { r 'noexec ENOENT sleep'; exit 127; }",
  // grep (GNU or busybox), if there is one, spares the end of a command most of a /proc scan.
  't G grep || G=',
  // A shell without job control starts an asynchronous list with INT and QUIT ignored, and the
  // command would inherit that; GNU env resets them as it execs the command. The probe is one
  // program start: env takes the option (coreutils 8.31 and later) and then prints its version.
  'R=default; t E env && "$E" --default-signal=INT,QUIT --version >/dev/null || { E= R=ignored; }',
  // w: the first word, what is exec'd; c: the command's argv[0], after the prefix. Every program
  // of the prefix (a word that is an absolute path and no assignment) must exist.
  'w=$1 i=0; for c; do [ "$i" = "$n" ] && break; case $c in /*=*) ;; /*) [ -f "$c" ] && [ -x "$c" ] || { r "noexec ENOENT $c"; exit 127; } ;; esac; i=$((i+1)); done',
  // argv[0] must be executable: a missing program is a report, not exit status 127.
  'case $c in',
  "  */*) [ -e \"$c\" ] || { r 'noexec ENOENT'; exit 127; }; [ -f \"$c\" ] && [ -x \"$c\" ] || { r 'noexec EACCES'; exit 127; } ;;",
  '  *) f=; IFS=:; for d in $PATH; do [ -f "${d:-.}/$c" ] && [ -x "${d:-.}/$c" ] && { f=1; break; }; done; unset IFS',
  "     [ -n \"$f\" ] || { r 'noexec ENOENT'; exit 127; } ;;",
  'esac',
  // env(1) would take a program name holding `=` for an assignment.
  'case $w in *=*) E= R=ignored ;; esac',
  // The fields of a stat line after the command's name, which may hold spaces and parentheses.
  "st() { set -- ${1##*') '}; S1=$1 S2=$2 S3=$3 S4=$4 S20=${20} S50=${50}; }",
  'SANDSTREAM_COMMAND=$I; export SANDSTREAM_COMMAND',
  // The waker's call (below): a handler, not an ignore, so the command does not inherit an ignored
  // SIGPIPE; set before the fork, as the waker may call as soon as the command ended. A forked
  // shell resets a caught signal, so neither the holder nor the command runs it.
  "U=; trap 'U=1' PIPE",
  // H, the holder: forks the command, then becomes a `sleep` that never reaps it. It is the first
  // element of a pipeline whose write end the command alone keeps, as fd 7.
  '{',
  '  (',
  // The command's own pid (a subshell's $$ is its parent's) and start time, reported before
  // it can write a byte; setsid, which does not fork for a process that leads no group,
  // makes that pid its session and group.
  "    { IFS= read -r l < /proc/self/stat; } && st \"$l\" && p=${l%% *} && printf '\\036sandstream:%s start %s %s %s %s\\n' \"$I\" \"$p\" \"$p\" \"$S20\" \"$R\" >&2",
  // Not before the holder is a `sleep`: a shell there could reap the command, and its status.
  '    { IFS= read -r m < /proc/self/comm; } && while { IFS= read -r h < "/proc/$S2/comm"; } && [ "$h" = "$m" ]; do :; done',
  '    [ -n "$E" ] && exec "$X" "$E" --default-signal=INT,QUIT -- "$@"',
  '    exec "$X" "$@"',
  '  ) <&8 7>&1 >&6 2>&9 6>&- 8<&- 9>&- &',
  // The holder's tag is the id and `-holder`: the SIGKILL of the tree (a sweep of the id) leaves
  // it, or the command's zombie would go to init and its status with it; a sweep of the
  // sandbox's prefix still finds it once the supervisor is gone.
  '  SANDSTREAM_COMMAND=$I-holder; exec "$Z" 2147483647 <&- >/dev/null 6>&- 8<&- 9>&-',
  // B, the waker: end-of-file on the read end comes once nothing holds fd 7 any more, which is
  // the command's end unless something it started keeps the descriptor (then the polls see the
  // end). It calls only while it is still this shell's child: a supervisor gone (killed) may
  // have a successor at its pid. No copy of the backend's streams: it may outlive the supervisor.
  '} | {',
  '  exec >/dev/null 6>&- 8<&- 9>&-; while read -r l; do :; done',
  '  { IFS= read -r l < /proc/self/stat; } && st "$l" && [ "$S2" = $$ ] && kill -s PIPE $$',
  '} &',
  // Standard input is the command's alone: a command that closes it leaves the pipe without a
  // reader, so a writer learns it (EPIPE) instead of filling a pipe the supervisor holds.
  'exec 6>&- 8<&- 0</dev/null',
  // A: how far each nap moves the backoff, M: the furthest it goes (see nap).
  'B=$! H= C= Q= d=0.001 k=0 A=4 M=32',
  // The owner lease (spec 1.4, the owner-loss rule): the host renews lease_file while its
  // foreground commands run, writing the sandbox's uptime in centiseconds at which the renewal
  // lapses; once the sandbox's clock passes the latest deadline seen, the owner is lost (dead,
  // or cut off for good) and the tree gets the termination sequence: TERM and CONT now, KILL
  // once the grace period passed, and the tag's sweep for what left the session. Checked at
  // every nap, with builtins only: a command that ends at once costs it nothing. The deadline is
  // kept here too, so a lease file that went missing or reads half-written never lapses early.
  'lease_lapse= lease_grace= lease_file= lease_deadline= owner_lost= owner_killed=',
  'if [ -n "$lease" ]; then lease_lapse=${lease%% *} lease=${lease#* }; lease_grace=${lease%% *} lease_file=${lease#* }; fi',
  // now_cs: the sandbox's uptime in centiseconds (a leading 0 of the fraction would read as octal).
  "now_cs() { IFS=' .' read -r up_s up_c _ < /proc/uptime; up_c=${up_c#0}; now=$((up_s * 100 + up_c)); }",
  // renewed: the latest deadline, from the file when it holds a number (a renewal may be midway).
  'renewed() { { read -r v < "$lease_file"; } 2>/dev/null && case $v in *[!0-9]*|\'\') ;; *) [ "$v" -gt "$lease_deadline" ] && lease_deadline=$v ;; esac; }',
  'if [ -n "$lease_file" ]; then',
  '  now_cs; lease_deadline=$((now + lease_lapse)); renewed',
  // A lease that cannot be written cannot be renewed either: the command runs without one
  // rather than being ended while its owner lives.
  '  { printf \'%s\\n\' "$lease_deadline" > "$lease_file"; } 2>/dev/null || lease_file=',
  'fi',
  'owner() {',
  '  [ -n "$lease_file" ] || return 0',
  '  now_cs',
  '  if [ -z "$owner_lost" ]; then',
  '    renewed; [ "$now" -gt "$lease_deadline" ] || return 0',
  "    owner_lost=$((now + lease_grace)); r lost; Q=\"$Q TERM CONT\"",
  // The owner is gone for good: so is its lease (its other commands keep the deadline they read).
  '    t rm_path rm && "$rm_path" -f -- "$lease_file"',
  '  elif [ -z "$owner_killed" ] && [ "$now" -ge "$owner_lost" ]; then',
  '    owner_killed=1; Q="$Q KILL"',
  // What left the session too, by its tag (not the holder's, `$I-holder`); without grep, the
  // group and the session are what the signals reach.
  '    [ -n "$G" ] && for f in $(SANDSTREAM_COMMAND= "$G" -lz "^SANDSTREAM_COMMAND=$I\\$" /proc/[0-9]*/environ 2>/dev/null); do f=${f#/proc/}; kill -s KILL "${f%/environ}"; done',
  '  fi',
  '}',
  // Each shell forks both elements of the pipeline itself, the holder first, and has no other
  // child yet: the holder is the child that is not $!.
  'if [ -e "/proc/$$/task/$$/children" ]; then { read -r H l _ < "/proc/$$/task/$$/children"; }; [ "$H" = "$B" ] && H=$l',
  'else for f in /proc/[0-9]*/stat; do { IFS= read -r l < "$f"; } || continue; st "$l"; [ "$S2" = $$ ] && [ "${l%% *}" != "$B" ] && { H=${l%% *}; break; }; done; fi',
  // A trap only records the signal: the main loop forwards it, so a handler never runs a scan
  // in the middle of another. `wait` returns at once when a trapped signal arrives.
  `for s in ${FORWARDED_SIGNALS.join(' ')}; do trap "Q=\\"\\$Q $s\\"" "$s"; done`,
  // nap: a `sleep` waited for, which a trapped signal (a forwarded one, the waker's) cuts short;
  // one that came before the wait began (during a scan, say) is seen in Q or U, and the nap
  // skipped or killed, so a forwarded signal never waits for a nap to end. A nap cut
  // short is killed, not waited for again (bash, its status reaped meanwhile, can wait forever);
  // a later wait reaps it. Untagged: a sweep of the tree must not find the supervisor's own naps;
  // holding none of the backend's streams, a nap cut short ends no later for them.
  // Polls back off from 1 ms to 100 ms, four naps a step: a short command is seen ending at
  // once, a long one costs ten `sleep`s a second. While the waker may still call (A=4) they are
  // only its fallback: a step a nap, on to 500 ms. The waker calls once; from then on the polls
  // are as without it.
  'nap() {',
  '  owner',
  '  [ -n "$U$Q" ] || { SANDSTREAM_COMMAND= "$Z" "$d" >/dev/null 9>&- & [ -z "$U$Q" ] && wait $! || kill $!; }',
  '  if [ -n "$U" ]; then U= A=1 M=24; [ "$k" -gt 24 ] && k=24 d=0.1; return 0; fi',
  '  k=$((k + A)); [ "$k" -gt "$M" ] && k=$M',
  '  case $k in 4) d=0.002 ;; 8) d=0.005 ;; 12) d=0.01 ;; 16) d=0.02 ;; 20) d=0.05 ;; 24) d=0.1 ;; 28) d=0.2 ;; 32) d=0.5 ;; esac',
  '}',
  // scan SIG: sends SIG to live members of the session outside the group.
  // scan '': true while a live process of the command's group or session exists.
  'scan() {',
  // First one grep over every stat line: no line with the group or session after the name is
  // a certain "none" (status 1), the usual end; a line that vanished as it was read (status 2:
  // a process reaped meanwhile, such as the waker) takes one more grep; a match, or a second
  // vanished line, takes the exact scan below, which no name can fool.
  '  [ -z "$1" ] && [ -n "$G" ] && for f in 1 2; do SANDSTREAM_COMMAND= "$G" -qsE "\\) [^ZXx] [0-9]+ ($C [0-9]+|[0-9]+ $C) " /proc/[0-9]*/stat; case $? in 0) break ;; 1) return 1 ;; esac; done',
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
  // A list of pids, each followed by a space, with no newline (`read` fails at its end yet
  // splits the first off into C by the default IFS); where the kernel has none
  // (no CONFIG_PROC_CHILDREN) the parent fields of every process are read instead.
  '  if [ -e "/proc/$H/task/$H/children" ]; then C=; { read -r C _ < "/proc/$H/task/$H/children"; }; [ -n "$C" ] && return 0; C=; return 1; fi',
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
  // Signals still reach the group while holders live on after the command's end; whether any
  // does is reported at once (`held`), so the driver need not guess it from a timer.
  "flush; if scan ''; then r held; while flush && scan ''; do nap; done; fi",
  // The command's zombie goes to init (or the nearest subreaper) with its holder.
  // The waker, if the command left something holding fd 7, and only while it is this shell's
  // child: once it ended, its pid may have been given out again.
  '{ IFS= read -r l < "/proc/$B/stat"; } && st "$l" && [ "$S2" = $$ ] && [ "$S1" != Z ] && kill -s KILL "$B"',
  'kill -s KILL "$H"; wait "$H" "$B"',
  'r gone',
  'case $K in',
  '  code) exit "$V" ;;',
  '  signal) trap - "$N"; kill -s "$N" $$; exit $((128 + V)) ;;',
  'esac',
  'exit 255',
].join('\n');

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
 * // ['/bin/sh', '-c', SUPERVISOR, 'sandstream-supervisor', id, '0', '0', '', 'printf', '%s\n', 'a b']
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
  return [command.shell ?? '/bin/sh', '-c', SUPERVISOR, SUPERVISOR_NAME, command.id, String(prefix.length), command.home === true ? '1' : '0', leaseWord(command.lease), ...prefix, ...command.argv];
}
