#!/bin/sh
# The start of a background command (spec 1.2, ADR-0036; the record: src/background.ts):
#   sh -c BACKGROUND sandstream-background DIR ARGV_JSON ACCOUNT TERMINAL supervisor-argv...
# Makes the record DIR, says `ok` (or `nospool`, `noscript PATH`) on standard error, then execs
# the unchanged supervisor with its streams on the record's files.
# TERMINAL (spec 1.5): empty, or `COLSxROWS SHELL SCRIPT` for a command on a terminal, whose one
# word left is then the supervisor's command line quoted for SHELL: util-linux's `script` (path
# SCRIPT) runs it on a new terminal, the supervisor leading its session, and writes every byte of
# the terminal to the record's `out`; its standard input is /dev/null, whose end it types on the
# terminal as an end-of-file character once the terminal is in canonical mode: the end-of-file at
# once that a terminal nobody writes to gets (spec 1.5, T3). The record also holds `terminal`
# (`COLS ROWS`, the size last set, for a listing; helper.sh's `resize` rewrites it).

dir=$1 argv_json=$2 account=$3 terminal=$4; shift 4
# The command gets the caller's umask back; the record's files are made under 077.
mask=$(umask)
# Output files for the command's account alone; the rest readable by every account (a listing).
umask 077
if [ -n "$terminal" ]; then
  size=${terminal%% *} script=${terminal#* }
  tty_shell=${script%% *} script=${script#* }
  # Before anything is made: nothing runs without it.
  [ -x "$script" ] || { echo "noscript $script" >&2; exit 127; }
fi
# The answer goes to standard error: a backend may hold standard output back until the end or
# until standard error speaks (Docker's adapter does, to tell its runtime's refusals).
mkdir "$dir" 2>/dev/null || { echo nospool >&2; exit 127; }

. ./lib/stat.sh

# This shell's start time, which the supervisor (or `script`) keeps across the exec: with the
# pid, the identity a follower and a listing check (lib/alive.sh). proc_stat is a function, so the
# positional parameters stay the supervisor's argv.
start=; proc_stat /proc/$$/stat && start=$st_start
# argv.json last, and whole (a rename): a record with it is complete, for a listing and an attach.
{
  printf '%s\n' "$account" > "$dir/account" && echo "$$ $start" > "$dir/pid" && : > "$dir/out" && : > "$dir/err" &&
    { [ -z "$terminal" ] || { printf '%s %s\n' "${size%x*}" "${size#*x}" > "$dir/terminal" && chmod 644 "$dir/terminal"; }; } &&
    printf '%s\n' "$argv_json" > "$dir/argv.new" && chmod 755 "$dir" && chmod 644 "$dir/account" "$dir/pid" "$dir/argv.new" &&
    mv -f "$dir/argv.new" "$dir/argv.json"
} 2>/dev/null || { echo nospool >&2; exit 127; }
echo ok >&2
umask "$mask"
# The supervisor (or `script`) keeps this pid; its streams are the record's files from here on.
[ -n "$terminal" ] || exec "$@" </dev/null >"$dir/out" 2>"$dir/err"
# `script` runs its command with `$SHELL -c`: SHELL is the shell the command line is quoted for,
# and the line sets the command's own back first (or unsets it).
if [ -n "${SHELL+set}" ]; then
  SANDSTREAM_SHELL=$SHELL; export SANDSTREAM_SHELL
  # Expanded by the shell `script` starts, on purpose.
  # shellcheck disable=SC2016
  restore='SHELL=$SANDSTREAM_SHELL; unset SANDSTREAM_SHELL; '
else
  restore='unset SHELL; '
fi
SHELL=$tty_shell; export SHELL
exec "$script" -q -e -c "$restore$1" /dev/null </dev/null >"$dir/out" 2>"$dir/err"
