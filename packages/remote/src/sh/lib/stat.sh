# Shared by every program that reads a process's stat line (scripts/embed-sh.mjs splices it in
# where a program sources it).
# shellcheck disable=SC2034 # the fields are set for the programs that source this file

# proc_stat FILE: reads the line of FILE (a /proc/<pid>/stat) into st_line and sets the fields
# the programs use; false when it cannot be read (the process is gone: a caller whose standard
# error someone reads sends the complaint to /dev/null). The command's name, the
# second field, may hold spaces and parentheses: the fields after it are counted from its last
# ") ". In a function, so its `set --` leaves the caller's positional parameters alone.
proc_stat() {
  IFS= read -r st_line < "$1" || return 1
  # Split on purpose: one positional parameter per field, the third field first.
  # shellcheck disable=SC2086
  set -- ${st_line##*') '}
  # pid (field 1), state (3), parent (4), process group (5), session (6), start time in clock
  # ticks since boot (22), and the wait status of a zombie (52, Linux 3.5 and later).
  st_pid=${st_line%% *} st_state=$1 st_ppid=$2 st_pgrp=$3 st_sid=$4 st_start=${20} st_wait=${50}
}
