/**
 * The process tree of a command inside the sandbox. Every command the
 * adapter starts carries a unique tag in its environment, which everything
 * it starts inherits, whatever process group or session it moves to. A
 * short helper command finds the tree by that tag through /proc and either
 * signals it or lists what is still alive (zombies count as gone).
 */
export const TAG_VARIABLE = 'SANDSTREAM_COMMAND';

/**
 * `sh -c TREE_SCRIPT tree TAG ACTION`: ACTION is a signal name without the
 * SIG prefix (`TERM`, `KILL`, `STOP`, ...) or `-` to list live members. It
 * prints one line per live member it found (`pid state`) and exits 0; with
 * `KILL` it repeats until a scan finds nothing left.
 */
const TREE_SCRIPT = [
  'tag=$1; action=$2; round=0',
  'while :; do',
  '  found=',
  '  for f in $(grep -lsxzF "$tag" /proc/[0-9]*/environ 2>/dev/null); do',
  '    p=${f#/proc/}; p=${p%/environ}',
  '    [ "$p" = "$$" ] && continue',
  // The state with the shell's own read: a sed per member cost a fork and an exec each, on
  // every round of every helper, while fifty trees were being torn down at once.
  '    { IFS= read -r l < "/proc/$p/stat"; } 2>/dev/null || continue',
  '    s=${l##*") "}; s=${s%% *}',
  '    case "$s" in ""|Z|X|x) continue ;; esac',
  '    if [ "$action" != - ]; then kill -s "$action" "$p" 2>/dev/null; fi',
  '    found="$found$p $s\n"',
  '  done',
  // SIGKILL is repeated until nothing is left: a member forked between the
  // scan and the kill would otherwise survive its parent.
  '  round=$((round + 1))',
  '  if [ "$action" != KILL ] || [ -z "$found" ] || [ "$round" -ge 50 ]; then break; fi',
  'done',
  'printf "$found"',
  'exit 0',
].join('\n');

/** The argv of a helper that signals (or, with `-`, lists) the tree tagged `tag`. */
export function treeHelper(tag: string, action: string): string[] {
  return ['sh', '-c', TREE_SCRIPT, 'sandstream-tree', `${TAG_VARIABLE}=${tag}`, action];
}

/** Live members of a tree from the helper's output. */
export function parseMembers(stdout: string): Array<{ pid: number; state: string }> {
  const members: Array<{ pid: number; state: string }> = [];
  for (const line of stdout.split('\n')) {
    const [pid, state] = line.trim().split(' ');
    if (pid !== undefined && /^\d+$/.test(pid)) members.push({ pid: Number(pid), state: state ?? '?' });
  }
  return members;
}
