# Shared by the follower and the listing of background records (scripts/embed-sh.mjs splices it in
# where a program sources it). Needs lib/stat.sh, and grep's path in $grep.
# shellcheck disable=SC2154 # the program sets grep, id, sup_pid and sup_start, lib/stat.sh the st_ fields

# alive: whether the supervisor of a record still runs (its pid in sup_pid, its start time in
# sup_start, the command's id in id): the process with that pid started at that time and is no
# zombie. The start time, not the argv, is the identity: the supervisor is the start's shell
# after an exec, and while a process execs its argv reads empty (the new image has none yet),
# which beside a second test suite had a follower take a starting command for ended. A record
# without a start time (made by an earlier driver) falls back to the argv: one word of it is the
# id (`-z`: the words are NUL-terminated, and busybox's grep would stop at the first NUL of a
# line).
alive() {
  [ -n "$sup_pid" ] || return 1
  [ -n "$sup_start" ] || { [ -r "/proc/$sup_pid/cmdline" ] && "$grep" -qzxF -e "$id" "/proc/$sup_pid/cmdline" 2>/dev/null; return; }
  proc_stat "/proc/$sup_pid/stat" 2>/dev/null && case $st_state in Z|X|x) return 1 ;; esac && [ "$st_start" = "$sup_start" ]
}
