#!/bin/sh
# The start of a background command (spec 1.2, ADR-0036; the record: src/background.ts):
#   sh -c BACKGROUND sandstream-background DIR ARGV_JSON ACCOUNT supervisor-argv...
# Makes the record DIR, says `ok` (or `nospool`) on standard error, then execs the unchanged
# supervisor with its streams on the record's files.

dir=$1 argv_json=$2 account=$3; shift 3
# Output files for the command's account alone; the rest readable by every account (a listing).
umask 077
# The answer goes to standard error: a backend may hold standard output back until the end or
# until standard error speaks (Docker's adapter does, to tell its runtime's refusals).
mkdir "$dir" 2>/dev/null || { echo nospool >&2; exit 127; }

. ./lib/stat.sh

# This shell's start time, which the supervisor keeps across the exec: with the pid, the identity
# a follower and a listing check (lib/alive.sh). proc_stat is a function, so the positional
# parameters stay the supervisor's argv.
start=; proc_stat /proc/$$/stat && start=$st_start
# argv.json last, and whole (a rename): a record with it is complete, for a listing and an attach.
{
  printf '%s\n' "$account" > "$dir/account" && echo "$$ $start" > "$dir/pid" && : > "$dir/out" && : > "$dir/err" &&
    printf '%s\n' "$argv_json" > "$dir/argv.new" && chmod 755 "$dir" && chmod 644 "$dir/account" "$dir/pid" "$dir/argv.new" &&
    mv -f "$dir/argv.new" "$dir/argv.json"
} 2>/dev/null || { echo nospool >&2; exit 127; }
echo ok >&2
# The supervisor keeps this pid; its streams are the record's files from here on.
exec "$@" </dev/null >"$dir/out" 2>"$dir/err"
