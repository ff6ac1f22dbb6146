#!/bin/sh
# The background records of a sandbox (spec 1.2, ADR-0036):
#   sh -c RECORDS sandstream-records list BASE
#     a line `ID STATE TERMINAL ARGV_JSON` per record (TERMINAL: `COLSxROWS`, the size last set
#     of a command on a terminal, or `-`);
#   sh -c RECORDS sandstream-records show DIR ID TAIL
#     `offsets OUT ERR` (the files' sizes with TAIL=1, else 0 0), `account NAME`, `state STATE`,
#     `terminal COLS ROWS` (a command on a terminal only), `argv JSON`; exit 3 when there is no
#     such record;
#   sh -c RECORDS sandstream-records remove PATTERN
#     removes the `PATTERN*` records (exit 0 when there are none).

# `a && b || c` means "c when a or b failed", as intended.
# shellcheck disable=SC2015

. ./lib/tools.sh
. ./lib/stat.sh
. ./lib/alive.sh

# Each variable is named after its tool (`tool` sets it).
grep='' wc=''
tool grep && tool wc || exit 2

# state_of DIR: sets state to running or ended, by the supervisor that DIR/pid names.
state_of() {
  { read -r sup_pid sup_start < "$1/pid"; } 2>/dev/null || sup_pid=
  state=ended; alive && state=running
}

# terminal_of DIR: sets cols and rows to the size last set of a command on a terminal (empty:
# pipes, or a record of an earlier driver).
terminal_of() {
  { read -r cols rows < "$1/terminal"; } 2>/dev/null || cols='' rows=''
}

case $1 in
  list)
    # A record removed as it is read is left out: one line each, whole, or none.
    base=$2
    for record in "$base"*; do
      { IFS= read -r argv_json < "$record/argv.json"; } 2>/dev/null && [ -n "$argv_json" ] || continue
      id=${record#"$base"}
      state_of "$record"
      terminal_of "$record"
      size=-; [ -z "$cols" ] || size=${cols}x$rows
      printf '%s %s %s %s\n' "$id" "$state" "$size" "$argv_json"
    done ;;
  show)
    dir=$2 id=$3
    [ -f "$dir/argv.json" ] || exit 3
    state_of "$dir"
    out_size=0 err_size=0
    [ "$4" = 1 ] && { out_size=$("$wc" -c < "$dir/out") && err_size=$("$wc" -c < "$dir/err") || exit 4; }
    # Unquoted: a wc that pads its count with blanks (not GNU's, nor busybox's) still gives numbers.
    # shellcheck disable=SC2086
    printf 'offsets %s %s\n' $out_size $err_size
    printf 'account %s\n' "$(cat "$dir/account")"
    printf 'state %s\n' "$state"
    terminal_of "$dir"
    [ -z "$cols" ] || printf 'terminal %s %s\n' "$cols" "$rows"
    printf 'argv '; cat "$dir/argv.json"
    exit 0 ;;
  remove) for record in "$2"*; do [ -d "$record" ] && rm -rf -- "$record"; done; exit 0 ;;
  *) exit 2 ;;
esac
