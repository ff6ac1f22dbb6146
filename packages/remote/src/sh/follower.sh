#!/bin/sh
# A follower of a background record (spec 1.2, ADR-0036):
#   sh -c FOLLOWER sandstream-follower DIR ID OUT_OFFSET ERR_OFFSET [WAIT_CS]
# Prints each of the record's files from its offset to its own standard output and error as they
# are written, so a driver reads a follower exactly as it reads a supervisor, and ends once the
# supervisor is gone and every byte was printed. Exit 2: a tool is missing; 3: no such record;
# 4: a file could not be read.
# WAIT_CS (a supervisor's terminal record, spec 1.5, ADR-0052): the follower is started beside
# the supervisor, so the record may not be there yet: it waits for it up to WAIT_CS centiseconds
# (then exit 3), prints the supervisor's `PID START` line on its standard output first (the
# record's `out` stays empty under a terminal), and removes the record once it printed the last
# report (nobody else reads a foreground command's record).

dir=$1 id=$2 out_at=$3 err_at=$4 wait_cs=${5-}

. ./lib/tools.sh
. ./lib/stat.sh
. ./lib/alive.sh

# Each variable is named after its tool (`tool` sets it).
sleep='' grep='' wc='' tail='' head='' rm=''
tool sleep && tool grep && tool wc && tool tail && tool head || exit 2
if [ -n "$wait_cs" ]; then
  tool rm || exit 2
  # The supervisor makes the directory, then `pid` (one write of a line), `out` and `err`.
  until [ -e "$dir/err" ] && { read -r sup_pid sup_start < "$dir/pid"; } 2>/dev/null; do
    [ "$wait_cs" -gt 0 ] || exit 3
    wait_cs=$((wait_cs - 1))
    "$sleep" 0.01
  done
  echo "$sup_pid $sup_start"
else
  { read -r sup_pid sup_start < "$dir/pid"; } 2>/dev/null || exit 3
fi

# print_new FILE OFFSET: prints the bytes of FILE past OFFSET that are there now; size is its new
# size, and printed 1 when there were any.
print_new() {
  size=$("$wc" -c < "$1") || return 1
  [ "$size" -gt "$2" ] || return 0
  printed=1
  "$tail" -c +$(($2 + 1)) "$1" | "$head" -c $((size - $2))
}

# Polls back off from 1 ms to 100 ms while nothing new comes, and start over at 1 ms when it does.
printed='' delay=0.001 step=0
while :; do
  # Alive before the reads: once it is seen gone, the reads after it have every byte it wrote.
  running=; alive && running=1
  print_new "$dir/out" "$out_at" || exit 4; out_at=$size
  print_new "$dir/err" "$err_at" >&2 || exit 4; err_at=$size
  if [ -z "$running" ]; then
    [ -z "$wait_cs" ] || "$rm" -rf -- "$dir"
    exit 0
  fi
  if [ -n "$printed" ]; then
    printed='' delay=0.001 step=0
  else
    step=$((step + 1))
    case $step in 4) delay=0.002 ;; 8) delay=0.005 ;; 12) delay=0.01 ;; 16) delay=0.02 ;; 20) delay=0.05 ;; 24) delay=0.1 ;; esac
  fi
  "$sleep" "$delay"
done
