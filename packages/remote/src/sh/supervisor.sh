#!/bin/sh
# The in-sandbox supervisor (ADR-0033; what it promises: src/supervisor.ts), run by dash, bash
# and busybox ash alike:
#   sh -c SUPERVISOR sandstream-supervisor ID N HOME LEASE TTY prefix... argv...
# ID: the command's id; N: how many words of argv are a prefix (wrappers that exec the command
# in turn); HOME: 1 to start in $HOME if it can (else stay where the backend started it); LEASE:
# the owner lease, `LAPSE GRACE FILE` (empty: none; see owner below); TTY: `SHELL SIZE OWN DIR`
# when it was started on a terminal (empty: pipes; see the terminal mode below).
# Embedded without comments, blank lines or indentation (scripts/embed-sh.mjs): it travels in
# argv. No here-document, no string over two lines: the embed strips leading blanks.

# `a && b || c` means "c when a or b failed" throughout, as intended.
# shellcheck disable=SC2015
# `a= b=` assigns empty strings, several to a line.
# shellcheck disable=SC1007

id=$1 nprefix=$2 home=$3 lease=$4 tty=$5; shift 5
[ "$home" = 1 ] && { cd "$HOME" 2>/dev/null || cd /; }
# fd 9: the backend's standard error, for reports; fd 8: its standard input, for the command (an
# asynchronous list gets /dev/null without an explicit redirection); fd 6: its standard output,
# for the command (the pipeline below takes the holder's). The shell's own complaints (a `kill`
# of a gone group, bash's job notices) go nowhere.
exec 9>&2 8<&0 6>&1 2>/dev/null
# report WORDS: one frame `\036sandstream:<id> WORDS`, one write(2) (see reports.ts).
report() { printf '\036sandstream:%s %s\n' "$id" "$1" >&9; }
# noexec WHY: the command cannot start (a `noexec` report, not exit status 127).
noexec() { report "noexec $1"; exit 127; }

. ./lib/tools.sh
. ./lib/stat.sh
. ./lib/tags.sh
. ./lib/uptime.sh

# The terminal mode (spec 1.5, ADR-0052): the backend started this shell on a terminal, as the
# leader of the terminal's session, which it keeps: a shell cannot give up a controlling
# terminal. The command leads a process group of its own that is the terminal's foreground group
# (the holder below). Its standard input, output and error are the terminal (fds 8 and 6). The
# reports cannot share the terminal: they go to DIR/err, a record a follower prints (DIR/pid says
# which supervisor writes it, DIR/out stays empty), so fd 9 is that file from here on.
# tty_shell: the shell that runs the holder (with job control); sid: the session the tree is in.
# SIZE: `COLSxROWS`, set on the terminal with stty where there is one, before anything runs on
# it (a backend may size it late: dockerd before API 1.42 ignores an exec's ConsoleSize), or `-`.
# OWN: the record's file that names this shell: `pid` in a record it makes (a foreground
# command's), or `supervisor` in a background command's that background.sh made, whose `pid`
# names the program holding the terminal (util-linux's `script`, which writes `out` and outlives
# this shell); there `supervisor` serves signals and resizes (helper.sh's `record` and `resize`).
tty_shell= tty_dir= stty=
if [ -n "$tty" ]; then
  tty_shell=${tty%% *} tty_dir=${tty#* }
  tty_size=${tty_dir%% *} tty_dir=${tty_dir#* }
  own=${tty_dir%% *} tty_dir=${tty_dir#* }
  proc_stat /proc/$$/stat && { [ "$own" = supervisor ] || { (umask 077 && mkdir -- "$tty_dir") && : > "$tty_dir/out"; }; } && echo "$$ $st_start" > "$tty_dir/$own" && exec 9>> "$tty_dir/err" || exit 127
  [ "$tty_size" = - ] || { tool stty && "$stty" rows "${tty_size#*x}" cols "${tty_size%x*}"; }
fi

# Its tools by the system's directories: the command's PATH is the caller's. Each variable is
# named after its tool (`tool` sets it).
[ -n "$tty" ] || tool setsid || noexec 'ENOENT setsid'
tool sleep || noexec 'ENOENT sleep'
# grep (GNU or busybox), if there is one, spares the end of a command most of a /proc scan.
tool grep || grep=
# A shell without job control starts an asynchronous list with INT and QUIT ignored, and the
# command would inherit that; GNU env resets them as it execs the command. The probe is one
# program start: env takes the option (coreutils 8.31 and later) and then prints its version.
# intquit: what the `start` report says of INT and QUIT.
intquit=default
tool env && "$env" --default-signal=INT,QUIT --version >/dev/null || { env= intquit=ignored; }
# gvisor: set under gVisor (its /proc has sentry-meminfo), whose zombies read 0 in field 52 of
# /proc/<pid>/stat whatever their end. There the holder stays a shell that reaps the command and
# exits with the status `wait` gave it, which the supervisor takes from the holder's own end:
# exact for codes 0 to 128 and for deaths by signal, while codes 129 to 192 read as signals (a
# shell's `wait` says 128+n for both). The command's pid is no longer held once it ended, which
# gVisor, handing out pids in order up to 4194304, gives again only after as many processes.
gvisor=; [ -e /proc/sentry-meminfo ] && gvisor=1

# exe FILE: whether FILE is a regular file this account may execute.
exe() { [ -f "$1" ] && [ -x "$1" ]; }
# first: the first word, what is exec'd; prog: the command's argv[0], after the prefix. Every
# program of the prefix (a word that is an absolute path and no assignment) must exist.
first=$1 i=0
for prog; do
  [ "$i" = "$nprefix" ] && break
  case $prog in
    /*=*) ;;
    /*) exe "$prog" || noexec "ENOENT $prog" ;;
  esac
  i=$((i+1))
done
# argv[0] must be executable: a missing program is a report, not exit status 127.
case $prog in
  */*)
    [ -e "$prog" ] || noexec ENOENT
    exe "$prog" || noexec EACCES ;;
  *)
    found=; IFS=:
    for d in $PATH; do exe "${d:-.}/$prog" && { found=1; break; }; done
    unset IFS
    [ -n "$found" ] || noexec ENOENT ;;
esac
# env(1) would take a program name holding `=` for an assignment.
case $first in *=*) env= intquit=ignored ;; esac

export SANDSTREAM_COMMAND="$id"
# woken: the waker's call (below) came. A handler, not an ignore, so the command does not inherit
# an ignored SIGPIPE; set before the fork, as the waker may call as soon as the command ended. A
# forked shell resets a caught signal, so neither the holder nor the command runs it.
woken=; trap 'woken=1' PIPE
# A trap only records the signal: the main loop forwards it once the command is known, so a
# handler never runs a scan in the middle of another. `wait` returns at once when a trapped signal
# arrives. Set before the fork too: the command reports its start from the fork, and the driver
# may signal this shell from then on; untrapped, a TERM there would end it with the command and
# its holder running on. The list is FORWARDED_SIGNALS of supervisor.ts (a test holds them equal).
sigs=
for s in HUP INT QUIT TERM USR1 USR2 ALRM WINCH CONT TSTP TTIN TTOU; do
  # Expanded now on purpose: each trap appends its own signal's name.
  # shellcheck disable=SC2064
  trap "sigs=\"\$sigs $s\"" "$s"
done
# The waker: end-of-file on the read end comes once nothing holds fd 7 any more, which is the
# command's end unless something it started keeps the descriptor (then the polls see the end).
# It calls only while it is still this shell's child: a supervisor gone (killed) may have a
# successor at its pid. No copy of the backend's streams: it may outlive the supervisor.
# Under gVisor the holder's line `<id> <status>` ends it too, and it exits with that status (a
# shell waits only for the last process of a pipeline: the waker's status is the one to read).
wake() {
  exec >/dev/null 6>&- 8<&- 9>&-; end=255; while read -r w v; do [ -n "$gvisor" ] && [ "$w" = "$id" ] && { end=$v; break; }; done
  proc_stat /proc/self/stat && [ "$st_ppid" = $$ ] && kill -s PIPE $$
  exit "$end"
}
# The terminal's holder (terminal mode), run by tty_shell with job control (`set -m`): a shell
# that was not forked can take the terminal, and forks the command as a background job, which
# puts it in a process group of its own; it closes the pipe to the waker, which only the command
# keeps (fd 7), and brings the job to the foreground (`fg` gives it the terminal). The command,
# still a shell, reports its start to the record, waits until its group is the foreground group,
# stops the holder with SIGSTOP (a stopped shell reaps nothing: the command's zombie stays, as
# under the `sleep` holder of the pipes) and waits until it is stopped, then execs argv.
# fd 9 goes only to the reports. Its standard error is the terminal: bash's job control
# takes the terminal as fd 2 (nothing is written there: `fg` prints the job on fd 1, /dev/null).
# A job that never gets the terminal (within some 5 s) reports `noexec ENOTTY`. Under gVisor (its 4th word) the holder is not stopped: `fg`
# reaps the command and its status goes to the waker, as there with pipes. Without job control
# (no terminal to take) the command does not start: `noexec ENOTTY`.
# Expansions here are the holder's own, in single quotes on purpose.
# shellcheck disable=SC2016
holder_sh='id=$1 intquit=$2 env=$3 gvisor=$4 sleep=$5; shift 5; set -m; case $- in *m*) ;; *) printf "\036sandstream:%s noexec ENOTTY\n" "$id" >&9; exit 127 ;; esac; ( export SANDSTREAM_COMMAND="$id"; read -r p _ _ h g _ < /proc/self/stat; read -r _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ t _ < /proc/self/stat; printf "\036sandstream:%s start %s %s %s %s\n" "$id" "$p" "$g" "$t" "$intquit" >&9; i=0; until read -r _ _ _ _ g _ _ f _ < /proc/self/stat; [ "$f" = "$g" ]; do i=$((i+1)); [ "$i" -lt 1200 ] || { printf "\036sandstream:%s noexec ENOTTY\n" "$id" >&9; exit 127; }; [ "$i" -lt 200 ] || "$sleep" 0.005; done; exec 9>&-; [ -n "$gvisor" ] || { kill -s STOP "$h"; until read -r _ _ s _ < "/proc/$h/stat"; [ "$s" = T ]; do :; done; }; [ -n "$env" ] && exec "$env" --default-signal=INT,QUIT -- "$@"; exec "$@" ) <&8 7>&1 >&6 2>&6 6>&- 8<&- & [ -n "$gvisor" ] || exec >/dev/null; fg >/dev/null; printf "%s %s\n" "$id" "$?"'
if [ -n "$tty" ]; then
  # The holder's tag is the id and `-holder` (see below); its process group is its own.
  # shellcheck disable=SC2154 # tool sets sleep
  { SANDSTREAM_COMMAND=$id-holder; exec "$tty_shell" -c "$holder_sh" sandstream-holder "$id" "$intquit" "$env" "$gvisor" "$sleep" "$@" 2>&6; } | wake &
else
  # setsid and sleep are set by `tool`, above.
  # shellcheck disable=SC2154
  # The holder: forks the command, then becomes a `sleep` that never reaps it. It is the first
  # element of a pipeline whose write end the command alone keeps, as fd 7.
  {
    (
      # The command's own pid (a subshell's $$ is its parent's) and start time, reported before it
      # can write a byte; setsid, which does not fork for a process that leads no group, makes
      # that pid its session and group. fd 9 is closed here: the report goes to fd 2, the same file.
      proc_stat /proc/self/stat && report "start $st_pid $st_pid $st_start $intquit" 9>&2
      # Not before the holder is a `sleep`: a shell there could reap the command, and its status
      # (under gVisor the holder stays a shell on purpose: see gvisor above).
      [ -n "$gvisor" ] || { IFS= read -r m < /proc/self/comm && while IFS= read -r h < "/proc/$st_ppid/comm" && [ "$h" = "$m" ]; do :; done; }
      [ -n "$env" ] && exec "$setsid" "$env" --default-signal=INT,QUIT -- "$@"
      exec "$setsid" "$@"
    ) <&8 7>&1 >&6 2>&9 6>&- 8<&- 9>&- &
    [ -n "$gvisor" ] && { exec <&- 6>&- 8<&- 9>&-; wait $!; printf '%s %s\n' "$id" "$?"; exit 0; }
    # The holder's tag is the id and `-holder`: the SIGKILL of the tree (a sweep of the id) leaves
    # it, or the command's zombie would go to init and its status with it; a sweep of the
    # sandbox's prefix still finds it once the supervisor is gone.
    SANDSTREAM_COMMAND=$id-holder; exec "$sleep" 2147483647 <&- >/dev/null 6>&- 8<&- 9>&-
  } | wake &
fi
# Standard input is the command's alone: a command that closes it leaves the pipe without a
# reader, so a writer learns it (EPIPE) instead of filling a pipe the supervisor holds.
exec 6>&- 8<&- 0</dev/null
# waker, cmd: the waker's and the command's pids (the latter once known); delay: the next nap's
# length; step, stride, top: the backoff (see nap). (sigs, the signals caught and not yet
# forwarded, is set with the traps above.)
waker=$! cmd= delay=0.001 step=0 stride=4 top=32

# The owner lease (spec 1.4, the owner-loss rule): the host renews lease_file while its foreground
# commands run, writing the sandbox's uptime in centiseconds at which the renewal lapses; once
# the sandbox's clock passes the latest deadline seen, the owner is lost (dead, or cut off for
# good) and the tree gets the termination sequence: TERM and CONT now, KILL once the grace period
# passed, and the tag's sweep for what left the session. Checked at every nap, with builtins
# only: a command that ends at once costs it nothing. The deadline is kept here too, so a lease
# file that went missing or reads half-written never lapses early.
lease_lapse= lease_grace= lease_file= lease_deadline= owner_lost= owner_killed=
if [ -n "$lease" ]; then lease_lapse=${lease%% *} lease=${lease#* }; lease_grace=${lease%% *} lease_file=${lease#* }; fi
# renewed: the latest deadline, from the file when it holds a number (a renewal may be midway).
renewed() { { read -r v < "$lease_file"; } 2>/dev/null && case $v in *[!0-9]*|'') ;; *) [ "$v" -gt "$lease_deadline" ] && lease_deadline=$v ;; esac; }
if [ -n "$lease_file" ]; then
  now_cs; lease_deadline=$((now + lease_lapse)); renewed
  # A lease that cannot be written cannot be renewed either: the command runs without one rather
  # than being ended while its owner lives.
  { printf '%s\n' "$lease_deadline" > "$lease_file"; } 2>/dev/null || lease_file=
fi
owner() {
  [ -n "$lease_file" ] || return 0
  now_cs
  if [ -z "$owner_lost" ]; then
    renewed; [ "$now" -gt "$lease_deadline" ] || return 0
    # On a terminal, SIGHUP first (spec 1.5, SS-PTY-5): what a closed terminal would send.
    owner_lost=$((now + lease_grace)); report lost; sigs="$sigs${tty:+ HUP} TERM CONT"
    # The owner is gone for good: so is its lease (its other commands keep the deadline they read).
    # shellcheck disable=SC2154 # tool sets rm
    tool rm && "$rm" -f -- "$lease_file"
  elif [ -z "$owner_killed" ] && [ "$now" -ge "$owner_lost" ]; then
    owner_killed=1; sigs="$sigs KILL"
    # What left the session too, by its tag (not the holder's, `<id>-holder`); without grep, the
    # group and the session are what the signals reach.
    # shellcheck disable=SC2046 # split on purpose: one word per /proc/<pid>/environ
    [ -n "$grep" ] && kill_listed $(tagged "$id\$")
  fi
}

# child_of PARENT [OTHER]: sets child to a child of PARENT other than OTHER; false when it has
# none. /proc/<pid>/task/<pid>/children is a list of pids, each followed by a space, with no
# newline (`read` fails at its end yet splits the first off by the default IFS); where the kernel
# has none (no CONFIG_PROC_CHILDREN) the parent fields of every process are read instead.
child_of() {
  child=
  if [ -e "/proc/$1/task/$1/children" ]; then
    read -r child other _ < "/proc/$1/task/$1/children"
    [ "$child" = "$2" ] && child=$other
  else
    for f in /proc/[0-9]*/stat; do
      proc_stat "$f" && [ "$st_ppid" = "$1" ] && [ "$st_pid" != "$2" ] && { child=$st_pid; break; }
    done
  fi
  [ -n "$child" ]
}
# Each shell forks both elements of the pipeline itself, the holder first, and has no other child
# yet: the holder is the child that is not the waker.
child_of $$ "$waker"; holder=$child


# nap: a `sleep` waited for, which a trapped signal (a forwarded one, the waker's) cuts short; one
# that came before the wait began (during a scan, say) is seen in sigs or woken, and the nap
# skipped or killed, so a forwarded signal never waits for a nap to end. A nap cut short is
# killed, not waited for again (bash, its status reaped meanwhile, can wait forever); a later
# wait reaps it. Untagged: a sweep of the tree must not find the supervisor's own naps; holding
# none of the backend's streams, a nap cut short ends no later for them.
# Polls back off from 1 ms to 100 ms, four naps a step: a short command is seen ending at once, a
# long one costs ten `sleep`s a second. While the waker may still call (stride 4) they are only
# its fallback: a step a nap, on to 500 ms. The waker calls once; from then on the polls are as
# without it. Each nap first looks at the owner lease.
nap() {
  owner
  [ -n "$woken$sigs" ] || { SANDSTREAM_COMMAND= "$sleep" "$delay" >/dev/null 9>&- & [ -z "$woken$sigs" ] && wait $! || kill $!; }
  if [ -n "$woken" ]; then woken= stride=1 top=24; [ "$step" -gt 24 ] && step=24 delay=0.1; return 0; fi
  step=$((step + stride)); [ "$step" -gt "$top" ] && step=$top
  case $step in 4) delay=0.002 ;; 8) delay=0.005 ;; 12) delay=0.01 ;; 16) delay=0.02 ;; 20) delay=0.05 ;; 24) delay=0.1 ;; 28) delay=0.2 ;; 32) delay=0.5 ;; esac
}

# scan SIG: sends SIG to live members of the session outside the group.
# scan '': true while a live process of the command's group or session exists.
# The session is the command's own with pipes, and this shell's on a terminal, where this shell's
# own group (its naps, the waker) and the holder's are not the tree's.
scan() {
  # First one grep over every stat line: no line with the group or session after the name is a
  # certain "none" (status 1), the usual end; a line that vanished as it was read (status 2: a
  # process reaped meanwhile, such as the waker) takes one more grep; a match, or a second
  # vanished line, takes the exact scan below, which no name can fool.
  [ -z "$1" ] && [ -n "$grep" ] && [ -z "$tty" ] && for f in 1 2; do SANDSTREAM_COMMAND= "$grep" -qsE "\) [^ZXx] [0-9]+ ($cmd [0-9]+|[0-9]+ $cmd) " /proc/[0-9]*/stat; case $? in 0) break ;; 1) return 1 ;; esac; done
  for f in /proc/[0-9]*/stat; do
    proc_stat "$f" || continue
    case $st_state in Z|X|x) continue ;; esac
    member=; [ "$st_sid" = "$sid" ] && [ "$st_pgrp" != "$cmd" ] && [ "$st_pgrp" != $$ ] && [ "$st_pgrp" != "$holder" ] && member=1
    if [ -n "$1" ]; then [ -n "$member" ] && kill -s "$1" "$st_pid"
    elif [ -n "$member" ] || [ "$st_pgrp" = "$cmd" ]; then return 0; fi
  done
  return 1
}

# flush: forwards the signals in sigs, taken and cleared in one command, which a trap cannot split.
flush() {
  [ -n "$cmd" ] || return 0
  q=$sigs sigs=
  # Before setsid ran, the command leads no group yet: its pid alone.
  for s in $q; do kill -s "$s" -- "-$cmd" || kill -s "$s" "$cmd"; scan "$s"; done
  return 0
}

# The command: the holder's one child.
# Under gVisor a command that ended before it was found was reaped by the holder: its status is
# the holder's, and with its pid unknown no scan of its group follows (the sweeps at close remain).
until child_of "$holder"; do
  if [ -n "$gvisor" ]; then
    # A holder on its way out may already refuse signals before its stat line says Z; one gone
    # before the supervisor looked for it was never found (holder is empty).
    [ -n "$holder" ] && kill -0 "$holder" && proc_stat "/proc/$holder/stat" && case $st_state in Z|X|x) false ;; esac || break
  else
    kill -0 "$holder" || { report 'exit unknown'; report gone; exit 255; }
  fi
  nap
done
cmd=$child sid=$child
[ -z "$tty" ] || sid=$$

# zombie: 0, the command is a zombie, its wait status in status; 1: running; 2: gone (reaped by
# someone else).
# Under gVisor: 0 once the waker ended with the status the holder gave it (see gvisor), decoded; 1 before.
zombie() {
  if [ -n "$gvisor" ]; then
    proc_stat "/proc/$waker/stat" && [ "$st_state" != Z ] && return 1
    # A trapped signal cuts a wait short with 128+n of its own: waited for again, the waker gives
    # its status (127 only when the first wait had it, the waker then being unknown).
    status=127; until q=$sigs; wait "$waker"; s=$?; [ "$s" = 127 ] || status=$s; [ "$s" -le 128 ] || [ "$sigs" = "$q" ]; do :; done
    [ "$status" -gt 128 ] && [ "$status" -le 192 ] && status=$((status - 128)) || status=$((status << 8))
    return 0
  fi
  proc_stat "/proc/$cmd/stat" || return 2; [ "$st_state" = Z ] || return 1; status=$st_wait
}
status=
while :; do flush; zombie; case $? in 0|2) break ;; esac; nap; done
# how, value, sig: how the command ended, for the supervisor's own exit below.
case $status in
  '') how=unknown; report 'exit unknown' ;;
  *)
    value=$((status & 127))
    if [ "$value" = 0 ]; then how=code value=$((status >> 8 & 255)); report "exit code $value"
    else how=signal sig=$(kill -l "$value"); report "exit signal $value $sig$( [ $((status & 128)) = 0 ] || echo ' core')"; fi ;;
esac
# Signals still reach the group while holders live on after the command's end; whether any does
# is reported at once (`held`), so the driver need not guess it from a timer.
flush; if [ -n "$cmd" ] && scan ''; then report held; while flush && scan ''; do nap; done; fi
# The command's zombie goes to init (or the nearest subreaper) with its holder. The waker, if the
# command left something holding fd 7, and only while it is this shell's child: once it ended,
# its pid may have been given out again.
proc_stat "/proc/$waker/stat" && [ "$st_ppid" = $$ ] && [ "$st_state" != Z ] && kill -s KILL "$waker"
# Under gVisor the holder has ended and been waited for: its pid is no longer its own.
[ -n "$gvisor" ] || kill -s KILL "$holder"; wait "$holder" "$waker"
report gone
# Exit with the command's status, dying of the same signal.
case $how in
  code) exit "$value" ;;
  signal) trap - "$sig"; kill -s "$sig" $$; exit $((128 + value)) ;;
esac
exit 255
