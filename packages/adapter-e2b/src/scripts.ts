/**
 * The small POSIX shell programs the driver runs inside the sandbox. envd
 * starts every command as a plain child (not the leader of a process group)
 * and signals only that one pid, so the driver brings its own means to
 * address the whole tree: each command leads a session of its own, and
 * signals and the liveness check address that session's process group.
 */

/** First bytes on standard error once the launcher is about to exec the command. */
export const LAUNCH_OK = '\u001esandstream:exec\n';
/** Prefix of the launcher's report that the command cannot be executed. */
export const LAUNCH_FAILED = '\u001esandstream:noexec:';
/** Every launcher report starts with this. */
export const LAUNCH_PREFIX = '\u001esandstream:';

/**
 * Runs as `setsid /bin/sh -c LAUNCH sandstream argv...`: `setsid` makes
 * the process (whose pid envd reports in the start event) the leader of a
 * new session and process group, then this script checks that argv[0] can
 * be executed (so a missing program is `SpawnFailed`, not exit status 127),
 * reports on standard error, and execs the command in place: the pid, the
 * group and the session stay the command's own.
 */
export const LAUNCH = [
  'c=$1',
  'fail() { printf "\\036sandstream:noexec:%s\\n" "$1" >&2; exit 127; }',
  'case $c in',
  '  */*) [ -e "$c" ] || fail ENOENT; [ -f "$c" ] && [ -x "$c" ] || fail EACCES ;;',
  '  *) f=; IFS=:',
  '     for d in $PATH; do [ -f "${d:-.}/$c" ] && [ -x "${d:-.}/$c" ] && { f=1; break; }; done',
  '     unset IFS',
  '     [ -n "$f" ] || fail ENOENT ;;',
  'esac',
  'printf "\\036sandstream:exec\\n" >&2',
  'exec "$@"',
].join('\n');

/**
 * `sh -c WATCH sandstream-watch PGID`: prints `gone` and exits when no
 * live (non-zombie) process is left in the group; prints `linger` first
 * when some are, then polls until they are gone. Without /proc, `kill -0`
 * is used and zombies count as alive.
 */
export const WATCH = [
  'p=$1',
  // Fast path: no process at all in the group, zombies included.
  'kill -0 "-$p" 2>/dev/null || { echo gone; exit 0; }',
  'alive() {',
  '  if [ -r /proc/self/stat ]; then',
  '    for s in /proc/[0-9]*/stat; do',
  '      { IFS= read -r l < "$s"; } 2>/dev/null || continue',
  "      set -- ${l##*') '}",
  '      [ "$3" = "$p" ] && [ "$1" != Z ] && [ "$1" != X ] && return 0',
  '    done',
  '    return 1',
  '  fi',
  '  kill -0 "-$p" 2>/dev/null',
  '}',
  'if alive; then echo linger; else echo gone; exit 0; fi',
  'while alive; do sleep 0.02; done',
  'echo gone',
].join('\n');

/**
 * `sh -c SIGNAL sandstream-signal NAME PGID`: sends signal NAME to every
 * process of the group. A group that is already gone is not an error.
 */
export const SIGNAL = 'kill -s "$1" -- "-$2" 2>/dev/null; exit 0';
