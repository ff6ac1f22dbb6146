/**
 * The two shell programs of the isolated mode. Both run under `/bin/sh`
 * (any POSIX shell) inside the sandbox's namespaces, take their data as
 * positional parameters (never spliced into the script text), and use only
 * util-linux `mount` and `pivot_root`, and POSIX utilities.
 */

/**
 * The sandbox's init: pid 1 of its PID namespace, run by `unshare`. It
 * applies the sandbox's mount table (layout.ts) with one `mount --all`,
 * adds the caller's mounts, pivots into the new root (and reports `pivoted` on standard output:
 * commands may start to enter), unmounts the old one, reports `ready` and
 * then only reaps the orphans its namespace hands it, until its descriptor
 * 3 (a pipe from the host) reaches end-of-file: the host process died, or
 * exited, without `close()` (which kills this process instead), or a command
 * killed its helper (`ending` on standard output tells a host process still
 * reading that no command is to enter). Then it runs
 * the termination sequence (spec 9.8) on every other process of the
 * namespace: SIGTERM and SIGCONT, and once the grace period is over, or
 * sooner once none is left, it ends, and the kernel kills whatever is left
 * in the namespace by SIGKILL. Loopback comes up meanwhile (by `ip` in the
 * background, or at once through sysfs). Its descriptor 3 closed says to a
 * process joining the environment (join.ts) that it is ready; its
 * descriptor 4, the host's cleanup pipe (janitor.ts), is held open for as
 * long as it lives, so that the root skeleton is removed only after the
 * namespace has ended.
 *
 * Parameters: `$1` the root skeleton's host path (it is bound onto itself:
 * nothing is written into it), `$2` whether to bring up loopback (`0`: no, `1`: by `ip`,
 * `sysfs`: through the sysfs the table mounts over the old root's /sys), `$3`
 * the mount table's file, `$4` the grace period in ms, then triples `source
 * target mode` (mode `ro` or `rw`) of extra mounts. Nothing is created on a host filesystem: the extra
 * mounts' missing mount points are made only in /tmp or the work directory,
 * which are private tmpfs mounts by then.
 *
 * `mount` does not canonicalize the table's paths (`--no-canonicalize`):
 * each is canonical already, worked out from a realpath and the kernel's
 * own mount table, and canonicalizing them took a third of mount's time.
 *
 * That the host's root came out read-only (a mount the host made between
 * the table and `unshare` came along writable) is checked by the host
 * process once `ready` is read, from the init's own mount table, before any
 * command runs (root-check.ts): one program fewer here.
 */
export const INIT_SCRIPT = String.raw`set -eu
root=$1 loopback=$2 table=$3 grace_ms=$4
shift 4
# The table first, as everything else waits for it (set -e: a failed mount ends this shell at
# its wait).
mount --all --no-canonicalize --fstab "$table" &
table_mounted=$!
# Descriptor 3 comes from the host: its end-of-file (the host process is gone,
# or close()) ends this process. A subshell of this one waits for it (the host
# writes nothing: a read returns at end-of-file), started now so that nothing
# starts after ready; a fork, no program to load.
while read -r _; do :; done <&3 >/dev/null 2>&1 &
holder=$!
lo=
if [ "$loopback" = 1 ]; then
  { ip link set lo up 2>/dev/null || ifconfig lo up; } &
  lo=$!
fi
wait "$table_mounted"
# Where the table mounted a sysfs of this network namespace over the old root's /sys, loopback
# comes up by its flags (IFF_UP|IFF_LOOPBACK), written by this shell: no program to start.
if [ "$loopback" = sysfs ]; then echo 0x9 >/sys/class/net/lo/flags; fi
# Read-only, mount by mount (a bind's flags are per mount), keeping each
# mount's other flags, which a user namespace may not clear. Mount points
# in /proc/self/mountinfo escape space, tab, newline and backslash as \ooo.
readonly_under() {
  awk -v under="$1" '
    function unescape(path,   out, i, c) {
      out = ""
      for (i = 1; i <= length(path); i++) {
        c = substr(path, i, 1)
        if (c == "\\" && substr(path, i + 1, 3) ~ /^[0-7][0-7][0-7]$/) {
          c = sprintf("%c", (substr(path, i + 1, 1) * 64) + (substr(path, i + 2, 1) * 8) + substr(path, i + 3, 1))
          i += 3
        }
        out = out c
      }
      return out
    }
    {
      point = unescape($5)
      if (point != under && index(point, under "/") != 1) next
      flags = $6
      if (flags ~ /^ro(,|$)/) next
      sub(/^rw,?/, "", flags)
      print (flags == "" ? "ro" : "ro," flags) "\t" point
    }' /proc/self/mountinfo | while IFS='	' read -r flags point; do
    mount -o "remount,bind,$flags" "$point"
  done
}
# Extra mounts: a mount point that does not exist can be made only where
# the sandbox is writable (/tmp, the work directory).
while [ $# -gt 0 ]; do
  source=$1 target=$2 mode=$3
  shift 3
  if [ -d "$source" ]; then mkdir -p "$root$target"; elif [ ! -e "$root$target" ]; then mkdir -p "$root$(dirname "$target")" && : >"$root$target"; fi
  mount --rbind "$source" "$root$target"
  if [ "$mode" = ro ]; then readonly_under "$root$target"; fi
done
cd "$root"
# The old root goes onto the sandbox's /tmp, not onto its /: a command's entry (nsenter) takes
# the topmost mount of / for its root, so from here on an entry gets the new root. Entries start
# now and wait for their go until ready, when the old root is gone: no command runs, nor
# resolves a path of its own, while the host's root is still under /tmp.
pivot_root . tmp
echo pivoted
# --no-mtab: nothing written into the sandbox's /run (libmount's utab).
umount --no-mtab --no-canonicalize -l /tmp
cd /
# Loopback came up meanwhile (ip had the old root's files at its start; it needs none since).
[ -z "$lo" ] || wait "$lo"
echo ready
# From here on: standard output stays open, so that its end-of-file tells the
# host that this process, and with it the namespace, is gone. The shell's wait
# for cat collects every child meanwhile, orphans handed to pid 1 included.
exec </dev/null 2>/dev/null
exec 3<&-
wait "$holder" || :
# Said to a host process still reading (its pipe's writer was killed): no command is to enter.
# Nobody reads once the host process is gone: no SIGPIPE, and the failed write is no error.
trap '' PIPE
echo ending 2>/dev/null || :
# End-of-file: the host process is gone without close(). Every other process of the namespace
# gets SIGTERM, then SIGCONT (a stopped one acts on SIGTERM only once continued): kill -1 from
# pid 1 reaches all of its namespace but itself. This shell's end, once none is left or the
# grace period is over, has the kernel kill what is left. A sleep collects the orphans handed
# to pid 1 meanwhile; kill -0 counts a zombie not yet collected, for one tick more.
clock() {
  read -r uptime _ </proc/uptime
  uptime_hundredths=${"${uptime#*.}"}
  now_ms=$((${"${uptime%.*}"} * 1000 + ${"${uptime_hundredths#0}"} * 10))
}
clock
deadline_ms=$((now_ms + grace_ms))
kill -TERM -1 2>/dev/null || :
kill -CONT -1 2>/dev/null || :
while kill -0 -1 2>/dev/null; do
  clock
  [ "$now_ms" -lt "$deadline_ms" ] || break
  # A sleep that takes no fraction (not coreutils', nor busybox's) waits a second.
  sleep 0.05 2>/dev/null || sleep 1
done
`;

/**
 * Runs in the command's place after `nsenter` entered the namespaces and
 * `setsid` made it the leader of a new process group. It reports on fd 3
 * `pid <pid>` (its pid in the sandbox, so that the driver finds it on the
 * host) and waits for `go` on fd 4, which the driver sends once it knows
 * the command's host pid and group and the sandbox is ready (a command may
 * enter as soon as the init has pivoted, while the old root is being
 * unmounted). Then it checks the working directory and the program as
 * `execvp` will see them inside the sandbox, reports `ok` or the failure,
 * closes both and execs the command (through `prlimit` and `setpriv` when
 * asked). The entry's programs run with a fixed PATH and `LC_ALL=C`
 * (`ENTRY_ENV`, driver.ts) and the carriers of the command's variables
 * (entry-env.ts); the command gets exactly its own: none of the entry's,
 * nor the PWD and OLDPWD of its `cd`. No value of the command's variables
 * is on this script's command line, nor on any other (entry-env.ts). The
 * program is looked up in the command's PATH (`SANDSTREAM_ENTRY_PATH` when
 * it has one). The exec argv always starts with `prlimit`'s or `setpriv`'s
 * path, which holds no `=`.
 *
 * Parameters: `$1` working directory, `$2` the program to look up, `$3` how
 * the variables are set: `export`, or the path of the env(1) that sets
 * them; `$4` `keep` for a command on a terminal, whose holder reports its
 * pid and sets its variables (terminal.ts): fd 3 and the carriers are then
 * left to what this execs; else `close`; then the full exec argv.
 */
export const ENTRY_SCRIPT = String.raw`cwd=$1 program=$2 mode=$3 report=$4
shift 4
# First the pid: the driver finds this process on the host, and says go once the sandbox is
# ready. Nothing before the go resolves a path of the sandbox's (its /tmp may still hold the
# host's old root).
echo "pid $$" >&3
read -r go <&4 || exit 125
[ "$go" = go ] || exit 125
if ! cd -- "$cwd" 2>/dev/null; then
  if [ -d "$cwd" ]; then echo "cwd is not accessible" >&3; elif [ -e "$cwd" ]; then echo "cwd is not a directory" >&3; else echo "cwd does not exist" >&3; fi
  exit 127
fi
# This shell runs with the entry's own PATH (ENTRY_ENV): the look-up takes the command's.
found=
case $program in
  */*) [ -f "$program" ] && [ -x "$program" ] && found=1 ;;
  *)
    if [ -n "${"${SANDSTREAM_ENTRY_PATH+set}"}" ]; then rest=$SANDSTREAM_ENTRY_PATH:; else rest=/bin:/usr/bin:; fi
    while [ -n "$rest" ]; do
      dir=${"${rest%%:*}"} rest=${"${rest#*:}"}
      [ -n "$dir" ] || dir=.
      if [ -f "$dir/$program" ] && [ -x "$dir/$program" ]; then found=1; break; fi
    done ;;
esac
if [ -z "$found" ]; then echo "no such executable" >&3; exit 127; fi
echo ok >&3
exec 4<&-
# A command on a terminal reports its pid once it runs there, and its variables are set as it
# execs there, by the holder (terminal.ts): fd 3 and the carriers stay.
[ "$report" = keep ] && exec "$@"
exec 3>&-
# env(1) expands each carrier in its split string itself, and -i leaves the command only its own.
[ "$mode" = export ] || exec "$mode" -i -S "$SANDSTREAM_ENTRY_SPLIT" "$@"
# The entry's own variables go, and the PWD and OLDPWD of its cd: the command's own, if it has
# them, are among its variables, exported from their carriers, which go last.
unset PATH LC_ALL PWD OLDPWD SANDSTREAM_ENTRY_PATH
eval "$SANDSTREAM_ENTRY_EXPORT"
exec "$@"
`;
