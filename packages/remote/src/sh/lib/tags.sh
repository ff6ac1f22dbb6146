# Shared by the programs that end processes by their tag (scripts/embed-sh.mjs splices it in
# where a program sources it). Needs `grep -z` (GNU or busybox), its path in $grep.
# shellcheck disable=SC2154 # the program sets grep
# shellcheck disable=SC1007 # an empty tag for grep alone

# tagged PATTERN: prints /proc/<pid>/environ of every process whose SANDSTREAM_COMMAND matches
# PATTERN, a basic regular expression after the `=` (`ID$` for one command, `PREFIX-` for every
# command of a sandbox). A zombie's environment reads empty: zombies count as gone. The grep
# itself carries an empty tag, so it never lists itself.
tagged() {
  SANDSTREAM_COMMAND= "$grep" -lz "^SANDSTREAM_COMMAND=$1" /proc/[0-9]*/environ 2>/dev/null
}

# kill_listed FILE...: SIGKILL, once, to the process of each /proc/<pid>/<file>, without waiting
# for it to die.
kill_listed() {
  for f; do
    f=${f#/proc/}
    kill -s KILL "${f%%/*}" 2>/dev/null
  done
}
