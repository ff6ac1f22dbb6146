/**
 * The guardian's program, for POSIX `sh` (dash, bash, busybox ash). Its
 * standard input carries one request a line:
 *
 * - `+PGID START GRACE_MS`: a command's process group, the start time of
 *   its leader (field 22 of `/proc/PGID/stat`) and its grace period;
 * - `-PGID`: that group is gone;
 * - `+sSID START GRACE_MS` and `-sSID`: the same for a terminal command's
 *   session (ADR-0053), whose every group is ended, SIGHUP first, as a
 *   closed terminal would.
 *
 * (`\${` is the template literal's escape of the shell's `${`.)
 */
export const GUARDIAN_SCRIPT = `# The groups to end, each entry " PGID:START:GRACE_MS" after a space, so
# that " $pgid:" matches the start of that group's entry only; a session's
# entry is " sSID:START:GRACE_MS".
registered=''

# Removes group $1's entry, if there is one.
forget() {
  case $registered in
    *" $1:"*)
      entries_before=\${registered%%" $1:"*}
      entries_after=\${registered#*" $1:"}
      # What is left of the entry (START:GRACE_MS) runs to the next space.
      case $entries_after in
        *' '*) entries_after=" \${entries_after#* }" ;;
        *) entries_after='' ;;
      esac
      registered=$entries_before$entries_after
      ;;
  esac
}

# Sets stat_fields to the fields of /proc/$1/stat from the third (the
# state) on; fails once the process is gone. The command name before them
# is in parentheses and may itself hold spaces and parentheses: the fields
# start after the last ") ".
read_stat() {
  read -r stat_line 2>/dev/null <"/proc/$1/stat" || return 1
  stat_fields=\${stat_line##*") "}
}

# Sets field to field $1 of the stat line read last, numbered as in
# proc(5): 3 is the state, 5 the process group, 22 the start time.
field() {
  field_rest=$stat_fields
  field_number=3
  while [ "$field_number" -lt "$1" ]; do
    field_rest=\${field_rest#* }
    field_number=$((field_number + 1))
  done
  field=\${field_rest%% *}
}

# Whether group $1, registered with its leader's start time $2, may be
# signalled. While a member of a group lives, the kernel gives its number
# to no new process: with the leader gone, a signal reaches what is left
# of the command or nothing. A process holding the number with another
# start time got it again, once the group was gone: not ours.
is_ours() {
  read_stat "$1" || return 0
  field 22
  [ "$field" = "$2" ]
}

# Sets groups to the groups (each " PGID " between spaces) that hold a
# process neither zombie nor dead for which "$@" succeeds, run with that
# process's stat read (read_stat): one look at every process. An orphan
# whose new parent does not reap it (a container's init often does not)
# stays a zombie for good, and is no member that counts.
find_groups() {
  groups=' '
  for proc_dir in /proc/[0-9]*; do
    read_stat "\${proc_dir#/proc/}" || continue
    field 3
    case $field in
      Z | X) continue ;;
    esac
    "$@" || continue
    field 5
    case $groups in
      *" $field "*) ;;
      *) groups="$groups$field " ;;
    esac
  done
}

# Whether the process whose stat was read last is of session $1 and
# started no earlier than $2, its leader's start time (a process older
# than the leader is not the command's), in a group past 1. A group never
# spans two sessions. (Called by find_groups, through "$@".)
# shellcheck disable=SC2317
in_session() {
  field 6
  [ "$field" = "$1" ] || return 1
  field 22
  [ "$field" -ge "$2" ] 2>/dev/null || return 1
  field 5
  [ "$field" -gt 1 ]
}

# Sends signal $1 to tree $2 (a group PGID, or a session sSID, each of
# whose groups gets it) whose leader started at $3.
signal_tree() {
  case $2 in
    s*)
      find_groups in_session "\${2#s}" "$3"
      for group in $groups; do
        kill "-$1" "-$group" 2>/dev/null
      done
      ;;
    *) kill "-$1" "-$2" 2>/dev/null ;;
  esac
}

# Whether tree $1, whose leader started at $2, has a member left. A
# session is looked at whole; kill -0 counts a group's zombies as members.
tree_left() {
  case $1 in
    s*)
      find_groups in_session "\${1#s}" "$2"
      [ "$groups" != ' ' ]
      ;;
    *) kill -0 "-$1" 2>/dev/null ;;
  esac
}

# Sets now_ms to the time since boot in milliseconds: /proc/uptime holds
# seconds with two decimals, and a builtin read forks nothing.
clock() {
  read -r uptime _ </proc/uptime
  uptime_hundredths=\${uptime#*.}
  now_ms=$((\${uptime%.*} * 1000 + \${uptime_hundredths#0} * 10))
}

# Waits a little, between two looks at the groups being ended. Only after
# end-of-file: this is the guardian's one fork. A sleep that takes no
# fraction (not coreutils', nor busybox's) waits a second.
tick=0.05
pause() {
  sleep "$tick" 2>/dev/null || {
    tick=1
    sleep "$tick"
  }
}

while read -r request start grace_ms; do
  pgid=\${request#[+-]}
  # Anything but a group number past 1 is no request of the host's: -0
  # and -1 would signal this guardian's own group, or every process.
  case \${pgid#s} in
    '' | *[!0-9]*) continue ;;
  esac
  [ "\${pgid#s}" -gt 1 ] || continue
  forget "$pgid"
  case $request in
    +*)
      case $start$grace_ms in
        '' | *[!0-9]*) continue ;;
      esac
      registered="$registered $pgid:$start:$grace_ms"
      ;;
  esac
done

# End-of-file: the host is gone. Every tree still registered and still
# its command's gets SIGTERM, then SIGCONT (a stopped group acts on the
# SIGTERM only once continued), and a deadline at the end of its grace
# period; a session gets SIGHUP first (an interactive shell ends on it and
# hangs its jobs up). Entries are digits, colons and an s: splitting them
# on spaces is safe.
clock
ending=''
for entry in $registered; do
  pgid=\${entry%%:*}
  entry_rest=\${entry#*:}
  start=\${entry_rest%%:*}
  grace_ms=\${entry_rest#*:}
  is_ours "\${pgid#s}" "$start" || continue
  case $pgid in
    s*) signals='HUP TERM CONT' ;;
    *) signals='TERM CONT' ;;
  esac
  for signal in $signals; do
    signal_tree "$signal" "$pgid" "$start"
  done
  ending="$ending $pgid:$start:$((now_ms + grace_ms))"
done

# A tree with no process left is done; one whose grace period is over
# gets SIGKILL (and is not waited for); one whose number names another
# command's leader now was gone before. The trees are watched together,
# so that the last is gone within the longest grace period, plus a tick.
# A group left with zombies only is then found by a look at every
# process, taken only when it cannot make a SIGKILL late (a look takes as
# long as the last one did: 0.4 ms a process under dash, whose read goes
# byte by byte).
look_ms=0
while [ -n "$ending" ]; do
  pause
  clock
  still_ending=''
  earliest_deadline_ms=''
  for entry in $ending; do
    pgid=\${entry%%:*}
    entry_rest=\${entry#*:}
    start=\${entry_rest%%:*}
    deadline_ms=\${entry_rest#*:}
    # Done: no member is left, or its number names another command's leader now.
    if ! is_ours "\${pgid#s}" "$start" || ! tree_left "$pgid" "$start"; then
      continue
    fi
    if [ "$now_ms" -ge "$deadline_ms" ]; then
      signal_tree KILL "$pgid" "$start"
      continue
    fi
    still_ending="$still_ending $entry"
    if [ -z "$earliest_deadline_ms" ] || [ "$deadline_ms" -lt "$earliest_deadline_ms" ]; then
      earliest_deadline_ms=$deadline_ms
    fi
  done
  ending=$still_ending
  # Members left, perhaps zombies only: a look tells, if there is time for one.
  if [ -z "$ending" ] || [ $((now_ms + look_ms)) -ge "$earliest_deadline_ms" ]; then
    continue
  fi
  look_started_ms=$now_ms
  find_groups true
  clock
  look_ms=$((now_ms - look_started_ms))
  still_ending=''
  for entry in $ending; do
    case $entry in
      s*) still_ending="$still_ending $entry" ;;
      *)
        case $groups in
          *" \${entry%%:*} "*) still_ending="$still_ending $entry" ;;
        esac
        ;;
    esac
  done
  ending=$still_ending
done
exit 0
`;
