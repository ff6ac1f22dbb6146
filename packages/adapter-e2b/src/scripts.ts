/**
 * The small POSIX shell programs the driver runs inside the sandbox.
 *
 * envd starts every command as a plain child (not the leader of a process
 * group), signals only that one pid, knows only SIGTERM and SIGKILL, and
 * closes the command's output pipes as soon as it has reaped it, so a
 * process the command left behind loses its output (and dies of SIGPIPE
 * on its next write). The driver therefore runs each command as two envd
 * processes:
 *
 * - the command itself, `setsid sh -c LAUNCH dir argv...`: it leads a
 *   session and process group of its own (the pid of envd's start event),
 *   checks that argv[0] can be executed, points its standard output and
 *   error at two FIFOs in `dir`, and execs argv in place, so envd's end
 *   event carries the command's own exit status;
 * - a relay, `sh -c RELAY dir pgid`, started once the launcher reported:
 *   it copies the FIFOs to its own standard output and error until every
 *   process holding them closed them, then waits until nothing of the
 *   command's process group is alive, removes `dir` and exits. Its end
 *   event therefore means "every byte is in and the tree is gone".
 */

/** Every launcher report on standard error starts with this. */
export const LAUNCH_PREFIX = '\u001esandstream:';
/**
 * The launcher's report that it is about to exec the command: this prefix,
 * a space, the leader's start time (field 22 of `/proc/<pid>/stat`, empty
 * without /proc) and a newline. The start time tells the command's group from
 * a later one that took the same number (see {@link RELAY}).
 */
export const LAUNCH_OK = '\u001esandstream:exec';
/** Prefix of the launcher's report that the command cannot be executed. */
export const LAUNCH_FAILED = '\u001esandstream:noexec:';

/**
 * `setsid sh -c LAUNCH sandstream DIR HOMECD N M assignments... wrapper...
 * argv...` (see the module comment). HOMECD `1`: change to `$HOME` if it
 * can, else stay in `/` (a command run as another account without a working
 * directory). The first M words are `NAME=VALUE` assignments of the
 * command's variables: the shell itself passes on only variables whose
 * names are shell identifiers, and rewrites `PWD`, `PPID` and `IFS`, so
 * they are set again by `env` (found by its own path, as the command's
 * PATH is the caller's) as the command is exec'd, with `nice -n 0` in
 * between when the next word holds a `=`, which `env` would take for one
 * more assignment. Setting them last also undoes the launcher's own
 * variables (`D`, `c`, `i`...) where the caller's have the same names. The next N words are a wrapper that execs the
 * command in turn (`prlimit` with the command's resource limits); argv[0]
 * is checked, and the wrapper must exist.
 */
export const LAUNCH = [
  'D=$1 h=$2 n=$3 m=$4; shift 4',
  '[ "$h" = 1 ] && { cd "$HOME" 2>/dev/null || cd /; }',
  'fail() { printf "\\036sandstream:noexec:%s\\n" "$1" >&2; exit 127; }',
  // w: the first word after the assignments; c: argv[0].
  'i=0; w=; for c; do [ "$i" = "$m" ] && w=$c; [ "$i" = "$((m + n))" ] && break; i=$((i+1)); done',
  'if [ "$n" -gt 0 ]; then [ -f "$w" ] && [ -x "$w" ] || fail NOWRAPPER; fi',
  'case $c in',
  '  */*) [ -e "$c" ] || fail ENOENT; [ -f "$c" ] && [ -x "$c" ] || fail EACCES ;;',
  '  *) f=; IFS=:',
  '     for d in $PATH; do [ -f "${d:-.}/$c" ] && [ -x "${d:-.}/$c" ] && { f=1; break; }; done',
  '     unset IFS',
  '     [ -n "$f" ] || fail ENOENT ;;',
  'esac',
  // env(1) by its own path: the command's PATH is the caller's, and may not lead to it.
  'E=; if [ "$m" -gt 0 ]; then for E in /usr/bin/env /bin/env ""; do [ -x "$E" ] && break; done; [ -n "$E" ] || fail "ENOENT: no env(1) in /usr/bin or /bin, which variables need"; fi',
  // Its own tools by the system's PATH, in a subshell: the command's PATH is the caller's.
  '(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; umask 077; mkdir -p "$D" && mkfifo "$D/o" "$D/e") 2>/dev/null || fail "EIO: cannot create FIFOs in $D"',
  // The subshell's $$ is the launcher's pid, which exec keeps for the command.
  'T=$( { IFS= read -r l < "/proc/$$/stat"; } 2>/dev/null && set -- ${l##*") "} && printf %s "${20}")',
  'printf "\\036sandstream:exec %s\\n" "$T" >&2',
  // Opening a FIFO for writing waits until the relay opened it for reading.
  'exec >"$D/o" 2>"$D/e"',
  '[ "$m" = 0 ] && exec "$@"',
  'case $w in *=*)',
  '  for N in /usr/bin/nice /bin/nice nice; do [ -x "$N" ] && break; done',
  '  t=$#; i=0',
  '  for a; do [ "$i" = "$m" ] && set -- "$@" "$N" -n 0; set -- "$@" "$a"; i=$((i+1)); done',
  '  shift "$t" ;;',
  'esac',
  'exec "$E" -- "$@"',
].join('\n');

/**
 * Exits 0 from the script when process `$p` exists but started at another
 * time than `$t` (the leader's start time, when known): the number was
 * taken again, which the kernel allows only once nothing of the group that
 * had it is left, so that group is gone and any group `$p` now is another's.
 */
const REUSED = 'reused() { [ -n "$t" ] && { IFS= read -r l < "/proc/$p/stat"; } 2>/dev/null && set -- ${l##*") "} && [ "${20}" != "$t" ]; }';

/**
 * True while a live (non-zombie) process of group `$p` exists. Without
 * /proc, `kill -0` decides and zombies count as alive. A group number
 * taken again by another group (see {@link REUSED}) is not this one.
 */
const ALIVE = [
  REUSED,
  'alive() {',
  '  kill -0 "-$p" 2>/dev/null || return 1',
  '  [ -r /proc/self/stat ] || return 0',
  '  reused && return 1',
  '  for s in /proc/[0-9]*/stat; do',
  '    { IFS= read -r l < "$s"; } 2>/dev/null || continue',
  "    set -- ${l##*') '}",
  '    [ "$3" = "$p" ] && [ "$1" != Z ] && [ "$1" != X ] && return 0',
  '  done',
  '  return 1',
  '}',
];

/** `sh -c RELAY sandstream-relay DIR PGID START` (see the module comment); START may be empty. */
export const RELAY = [
  'D=$1 p=$2 t=$3',
  ...ALIVE,
  // cat's own complaints go nowhere: the relay's stderr is the command's. (A command ended
  // while starting has its FIFOs removed before the relay opens them.)
  'cat "$D/o" 2>/dev/null & cat "$D/e" >&2 2>/dev/null',
  'wait',
  // Silent too: the unblock helper may be renaming the FIFOs meanwhile ("Directory not empty"),
  // and it removes the directory itself when it is done.
  'rm -rf "$D" 2>/dev/null',
  'while alive; do sleep 0.02; done',
].join('\n');

/**
 * `sh -c SIGNAL sandstream-signal NAME PGID START`: sends signal NAME to every
 * process of the group. A group that is already gone is not an error, and a
 * group number another group took since (START, the leader's start time,
 * tells; see {@link REUSED}) is left alone.
 */
export const SIGNAL = [REUSED, 's=$1 p=$2 t=$3', 'reused && exit 0', 'kill -s "$s" -- "-$p" 2>/dev/null; exit 0'].join('\n');

/**
 * `sh -c UNBLOCK sandstream-unblock DIR`: lets a relay that waits on FIFOs
 * nobody will write end (opening read-write never blocks, and closing
 * drops the last writer), and a launcher that waits for a reader, then
 * removes them. Nothing to do when DIR is already gone.
 *
 * The FIFOs are renamed first. A relay started late (its start raced the
 * command's end) may open them at any moment: an open of the old name
 * after the rename fails at once, one made before it is let go by the
 * openings that follow. Without the rename, an open that came after the
 * last of them waited forever on a FIFO no name led to any more.
 */
export const UNBLOCK = [
  '[ -d "$1" ] || exit 0',
  'for f in o e; do [ -p "$1/$f" ] && mv -f "$1/$f" "$1/$f.gone"; done',
  'for i in 1 2 3; do',
  // `true`, not `exec`: a FIFO the relay removed meanwhile fails the opening, and a redirection
  // that fails on a special built-in such as `exec` would end the helper before its removal.
  '  for f in "$1/o.gone" "$1/e.gone"; do [ -p "$f" ] && true 3<>"$f"; done',
  '  sleep 0.05',
  'done',
  'rm -rf "$1"',
].join('\n');
