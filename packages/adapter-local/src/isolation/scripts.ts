/**
 * The two shell programs of the isolated mode. Both run under `/bin/sh`
 * (any POSIX shell) inside the sandbox's namespaces, take their data as
 * positional parameters (never spliced into the script text), and use only
 * util-linux `mount` and POSIX utilities.
 */

/**
 * The sandbox's init: pid 1 of its PID namespace, run by `unshare`. It
 * builds the sandbox's filesystem, pivots into it, reports `ready` on
 * standard output and then only reaps the orphans its namespace hands it,
 * until its descriptor 3 (a pipe from the host) reaches end-of-file.
 * When it ends, the kernel kills everything else in the namespace.
 *
 * Parameters: `$1` the host directory to build the new root on, `$2` the
 * work directory's path inside, `$3` whether to bring up loopback (1/0),
 * then triples `source target mode` (mode `ro` or `rw`) of extra mounts.
 * Nothing is created on a host filesystem: directories are made only in
 * the new root's tmpfs before it turns read-only, and in /tmp or the work
 * directory after.
 *
 * The new root is a tmpfs holding a recursive bind of every top-level
 * entry of the host's root (except /proc, /dev, /tmp and /run; /sys
 * without the mounts below it where that is allowed), all made read-only
 * mount by mount; /dev is a minimal tmpfs (null, zero, full, random,
 * urandom, tty, a private devpts and /dev/shm), so no disk is reachable;
 * /proc is a new procfs of this PID namespace with /proc/sys read-only and
 * /proc/sysrq-trigger masked; /run (where host daemons keep their
 * sockets), /tmp and the work directory are private tmpfs mounts.
 */
export const INIT_SCRIPT = String.raw`set -eu
root=$1 work=$2 loopback=$3
shift 3
mount -t tmpfs -o mode=0755 sandstream-root "$root"
# The host root's top-level entries of one kind, as "$root/<name>" or "/<name>".
entries() {
  kind=$1 prefix=$2
  shift 2
  for entry in /* /.[!.]*; do
    case $entry in /proc | /dev | /tmp | /run) continue ;; esac
    if [ -L "$entry" ]; then [ "$kind" = link ] || continue
    elif [ -d "$entry" ]; then [ "$kind" = dir ] || continue
    elif [ -e "$entry" ]; then [ "$kind" = file ] || continue
    else continue
    fi
    set -- "$@" "$prefix$entry"
  done
  [ $# -gt 0 ] || return 0
  case $kind in
    link) cp -P -- "$@" "$root/" ;;
    dir) mkdir -- "$@" "$root/dev" "$root/proc" "$root/tmp" "$root/run" "$root$work" ;;
    file) : ;;
  esac
}
entries link ''
entries dir "$root"
for entry in /* /.[!.]*; do
  case $entry in /proc | /dev | /tmp | /run) continue ;; esac
  if [ -L "$entry" ]; then continue
  elif [ "$entry" = /sys ]; then mount --bind /sys "$root/sys" 2>/dev/null || mount --rbind /sys "$root/sys"
  elif [ -d "$entry" ]; then mount --rbind "$entry" "$root$entry"
  elif [ -e "$entry" ]; then : >"$root$entry" && mount --bind "$entry" "$root$entry"
  fi
done
# A minimal /dev: no disks or other host devices.
mount -t tmpfs -o mode=0755,nosuid sandstream-dev "$root/dev"
for node in null zero full random urandom tty; do
  : >"$root/dev/$node"
  mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir "$root/dev/pts" "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
if mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts" 2>/dev/null; then ln -s pts/ptmx "$root/dev/ptmx"; fi
# Read-only, mount by mount (a bind's flags are per mount), keeping each
# mount's other flags, which a user namespace may not clear. Mount points
# in /proc/self/mountinfo escape space, tab, newline and backslash as \ooo.
readonly_under() {
  awk -v under="$1" -v dev="$root/dev" '
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
      if (point == dev || index(point, dev "/") == 1) next
      if (point != under && index(point, under "/") != 1) next
      flags = $6
      if (flags ~ /^ro(,|$)/) next
      sub(/^rw,?/, "", flags)
      print (flags == "" ? "ro" : "ro," flags) "\t" point
    }' /proc/self/mountinfo | while IFS='	' read -r flags point; do
    mount -o "remount,bind,$flags" "$point"
  done
}
readonly_under "$root"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
# Kernel settings and triggers that are not per namespace stay out of reach.
mount --bind "$root/proc/sys" "$root/proc/sys"
mount -o remount,bind,ro,nosuid,nodev,noexec "$root/proc/sys"
if [ -e "$root/proc/sysrq-trigger" ]; then mount --bind /dev/null "$root/proc/sysrq-trigger"; fi
mount -t tmpfs -o mode=0755,nosuid,nodev sandstream-run "$root/run"
mount -t tmpfs -o mode=1777,nosuid,nodev sandstream-tmp "$root/tmp"
mount -t tmpfs -o mode=1777,nosuid,nodev sandstream-shm "$root/dev/shm"
mount -t tmpfs -o mode=0777 sandstream-work "$root$work"
# Extra mounts: a mount point that does not exist can be made only where
# the sandbox is writable (/tmp, the work directory).
while [ $# -gt 0 ]; do
  source=$1 target=$2 mode=$3
  shift 3
  if [ -d "$source" ]; then mkdir -p "$root$target"; elif [ ! -e "$root$target" ]; then mkdir -p "$root$(dirname "$target")" && : >"$root$target"; fi
  mount --rbind "$source" "$root$target"
  if [ "$mode" = ro ]; then readonly_under "$root$target"; fi
done
if [ "$loopback" = 1 ]; then
  ip link set lo up 2>/dev/null || ifconfig lo up
fi
cd "$root"
pivot_root . .
umount -l .
cd /
echo ready
# From here on: standard output stays open, so that its end-of-file tells the
# host that this process, and with it the namespace, is gone. Descriptor 3
# comes from the host: its end-of-file (the host process is gone, or close())
# ends this process. cat waits for it; a shell's wait collects every child
# meanwhile, orphans handed to pid 1 included.
exec </dev/null 2>/dev/null
cat <&3 >/dev/null 2>&1 &
exec 3<&-
wait "$!" || :
`;

/**
 * Runs in the command's place after `nsenter` entered the namespaces and
 * `setsid` made it the leader of a new process group: checks the working
 * directory and the program as `execvp` will see them inside the sandbox,
 * reports `ok <pid>` (its pid in the sandbox) or the failure on fd 3, waits
 * for `go` on fd 4, closes both and execs the command (through `prlimit` and
 * `setpriv` when asked). It leaves the environment as it found it: `cd`
 * makes the shell set PWD, which is restored or removed; and as the shell
 * passes on only variables whose names are shell identifiers, and its own
 * variables (`cwd`, `program`...) would replace the caller's of the same
 * name, the command's variables are set again by `env` (by its own path:
 * the command's PATH is the caller's) as the command is exec'd. The word
 * after them is always `setpriv`'s path, which holds no `=`.
 *
 * Parameters: `$1` working directory, `$2` `set`/`unset` and `$3` the
 * original PWD, `$4` the program to look up, `$5` a count N, then N
 * `NAME=VALUE` assignments, then the full exec argv.
 */
export const ENTRY_SCRIPT = String.raw`cwd=$1 pwdstate=$2 pwdvalue=$3 program=$4 count=$5
shift 5
if ! cd -- "$cwd" 2>/dev/null; then
  if [ -d "$cwd" ]; then echo "cwd is not accessible" >&3; elif [ -e "$cwd" ]; then echo "cwd is not a directory" >&3; else echo "cwd does not exist" >&3; fi
  exit 127
fi
found=
case $program in
  */*) [ -f "$program" ] && [ -x "$program" ] && found=1 ;;
  *)
    rest=${"${PATH-/bin:/usr/bin}"}:
    while [ -n "$rest" ]; do
      dir=${"${rest%%:*}"} rest=${"${rest#*:}"}
      [ -n "$dir" ] || dir=.
      if [ -f "$dir/$program" ] && [ -x "$dir/$program" ]; then found=1; break; fi
    done ;;
esac
if [ -z "$found" ]; then echo "no such executable" >&3; exit 127; fi
envtool=
if [ "$count" -gt 0 ]; then
  for envtool in /usr/bin/env /bin/env ''; do [ -x "$envtool" ] && break; done
  if [ -z "$envtool" ]; then echo "no env(1) in /usr/bin or /bin" >&3; exit 127; fi
fi
if [ "$pwdstate" = set ]; then PWD=$pwdvalue; export PWD; else unset PWD; fi
echo "ok $$" >&3
read -r go <&4 || exit 125
[ "$go" = go ] || exit 125
exec 3>&- 4<&-
[ "$count" = 0 ] && exec "$@"
exec "$envtool" -- "$@"
`;
