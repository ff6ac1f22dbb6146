#!/bin/sh
# The helper commands the driver runs in the sandbox when the supervisor cannot do the job itself
# (ADR-0033; each command's contract: src/helpers.ts):
#   sh -c HELPER sandstream-helper signal SIG PGID START
#   sh -c HELPER sandstream-helper process SIG PID START
#   sh -c HELPER sandstream-helper kill PGID START ID
#   sh -c HELPER sandstream-helper abandon ID
#   sh -c HELPER sandstream-helper sweep PATTERN [FILE...]
#   sh -c HELPER sandstream-helper lease FILE LAPSE_CS
#   sh -c HELPER sandstream-helper record SIG DIR
#   sh -c HELPER sandstream-helper resize DIR COLS ROWS
# The helper channel (channel.sh) runs it too, once per request, in a subshell.

# Its tools by the system's directories, in the order lib/tools.sh looks: the command's PATH is the
# caller's.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
grep='grep'

. ./lib/stat.sh
. ./lib/tags.sh
. ./lib/uptime.sh

# reused PGID START: whether the group's number was given out again: the process with that pid
# started at another time than START, the command's start time (the kernel gives a number out
# again only once nothing of its group is left, so the command's group is gone).
reused() { [ -n "$2" ] && proc_stat "/proc/$1/stat" 2>/dev/null && [ "$st_start" != "$2" ]; }
# group SIG PGID START: SIG to the command's process group, unless its number was given out again.
group() { reused "$2" "$3" || kill -s "$1" -- "-$2" 2>/dev/null; return 0; }

# sweep PATTERN: SIGKILL to what carries the tag, until nothing does (exit 0) or 50 rounds passed
# (exit 1): a start it races may still be forking.
# remove_lapsed PREFIX: removes the owner leases under PREFIX that lapsed. A lapsed lease ends its
# commands whether or not its file is there (each supervisor keeps the deadline it read), and the
# one that sees it lapse removes it; but an owner that died while its commands were ending by
# themselves leaves its file to whoever looks next: a renewal of a live owner, or a close.
remove_lapsed() {
  now_cs
  for lease in "$1"*; do
    { read -r deadline < "$lease"; } 2>/dev/null || continue
    case $deadline in *[!0-9]*|'') continue ;; esac
    [ "$deadline" -ge "$now" ] || rm -f -- "$lease"
  done
}

# supervisors ID: prints /proc/<pid>/cmdline of every live process whose argv holds the supervisor's
# name and ID as whole words: the supervisor of ID, and its forks that have not exec'd yet. A
# zombie's argv reads empty.
supervisors() {
  # The paths have no blanks: a word each.
  # shellcheck disable=SC2013
  for f in $(grep -lzx -e "$1" /proc/[0-9]*/cmdline 2>/dev/null); do
    grep -qzx sandstream-supervisor "$f" 2>/dev/null && echo "$f"
  done
}

sweep() {
  round=0
  while listed=$(tagged "$1"); [ -n "$listed" ]; do
    # Split on purpose: one word per /proc/<pid>/environ.
    # shellcheck disable=SC2086
    kill_listed $listed
    round=$((round + 1)); [ "$round" -lt 50 ] || exit 1
    sleep 0.01
  done
}

case $1 in
  signal) group "$2" "$3" "$4" ;;
  # SIG to one process, unless its pid was given out again: a supervisor on a terminal, which
  # forwards it to its whole session (spec 1.5), where the backend cannot signal it itself.
  process) reused "$3" "$4" || kill -s "$2" "$3" 2>/dev/null ;;
  # The same for a background command on a terminal, its supervisor named by the record DIR
  # (background.sh); exit 3 while the record names none.
  record)
    { read -r pid start < "$3/supervisor"; } 2>/dev/null || exit 3
    reused "$pid" "$start" || kill -s "$2" "$pid" 2>/dev/null ;;
  # A background command's terminal (spec 1.5): the size set on the controlling terminal of the
  # supervisor the record DIR names (the kernel sends the foreground group SIGWINCH), then written
  # to `terminal`, the size last set, for a listing. Exit 3 once the supervisor is gone.
  resize)
    dir=$2 cols=$3 rows=$4
    { read -r pid start < "$dir/supervisor"; } 2>/dev/null || exit 3
    proc_stat "/proc/$pid/stat" 2>/dev/null && [ "$st_start" = "$start" ] || exit 3
    case $st_state in Z|X|x) exit 3 ;; esac
    # Field 7, the terminal's device number (Linux's encoding): a pseudo-terminal's major is 136,
    # and its minor the N of /dev/pts/N.
    # shellcheck disable=SC2086 # split on purpose: the fields after the command's name
    set -- ${st_line##*') '}
    [ $((($5 >> 8) & 4095)) = 136 ] || exit 1
    stty -F "/dev/pts/$((($5 & 255) | (($5 >> 12) & 1048320)))" cols "$cols" rows "$rows" || exit 1
    printf '%s %s\n' "$cols" "$rows" > "$dir/terminal.new" && mv -f -- "$dir/terminal.new" "$dir/terminal" || exit 1 ;;
  # SIGKILL to the group, then once to what carries the command's tag now, without waiting for it
  # to die. The supervisor lives on and reports `gone` once its group and session are empty: the
  # kill itself waits for nothing (under load, waiting here for every death outran the request
  # bound).
  kill)
    group KILL "$2" "$3"
    # shellcheck disable=SC2046 # split on purpose: one word per /proc/<pid>/environ
    kill_listed $(tagged "$4\$") ;;
  # At close: once, without waiting (close() is bounded; what got SIGKILL is as good as gone).
  # After the pattern, the prefix of owner leases and the handle's own leases, gone with its
  # commands; and under the prefix, the leases that lapsed.
  sweep)
    # shellcheck disable=SC2046 # split on purpose: one word per /proc/<pid>/environ
    kill_listed $(tagged "$2")
    lapsed=${3-}
    shift 2; [ "$#" = 0 ] || shift
    [ "$#" = 0 ] || rm -f -- "$@"
    [ -z "$lapsed" ] || remove_lapsed "$lapsed" ;;
  # A start whose outcome is unknown: SIGKILL to the supervisor whose argv holds the id (it may not
  # have forked yet), whose argv holds its name and the id as whole words, and to what it forked
  # that has not exec'd yet (a fork shares its argv), round after round until none is left: a fork
  # that outlived its supervisor by a round would exec its holder or its command after the sweep
  # below, tagged too late for it, and run on. Then the sweep of the id and of its holder
  # (`ID-holder`).
  # The sweep runs whatever the rounds came to (a process the kernel has yet to end still shows its
  # argv): what exec'd is found by the tag; the exit status says a round was left over.
  abandon)
    round=0 left=0
    while listed=$(supervisors "$2"); [ -n "$listed" ]; do
      # Split on purpose: one word per /proc/<pid>/cmdline.
      # shellcheck disable=SC2086
      kill_listed $listed
      round=$((round + 1)); [ "$round" -lt 50 ] || { left=1; break; }
      sleep 0.01
    done
    sweep "$2"
    exit "$left" ;;
  # Renews an owner lease: FILE holds the sandbox's uptime in centiseconds plus LAPSE_CS, the
  # moment the renewal lapses; one write(2) of a line. Then, under PREFIX, the leases that lapsed.
  lease)
    now_cs; printf '%s\n' $((now + $3)) > "$2" || exit 1
    [ -z "${4-}" ] || remove_lapsed "$4" ;;
  *) exit 2 ;;
esac
exit 0
