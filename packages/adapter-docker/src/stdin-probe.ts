/**
 * Whether anything of a command still holds its standard input open, asked
 * inside the container when a write to it stalls.
 *
 * An exec's standard input cannot tell the client that its reader is gone:
 * dockerd's copy into the process's pipe stops on `EPIPE` and then simply
 * stops reading the hijacked connection, so a write to a command that
 * closed its standard input would wait forever. So a write the Engine has
 * not taken up is checked with this helper, which looks at every process
 * carrying the command's tag: a pipe one of them holds the read end of
 * while none of them holds its write end is fed from outside the tree,
 * which is the exec's standard input (a pipe between two of the tree's own
 * processes has both ends inside). Exit 0: there is none, standard input
 * is closed for good; exit 3: there is one, the command is only slow to
 * read. Needs `readlink` and `/proc/<pid>/fdinfo` (Linux 2.6.22).
 */
import { TAG_VARIABLE } from '@sandstream/remote';

/** What the probe is called in its own argv. */
export const STDIN_PROBE_NAME = 'sandstream-stdin-probe';

/** The probe's exit when a process of the command still holds the pipe. */
export const STDIN_HELD = 3;

export const STDIN_PROBE = [
  'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  `T=$(grep -lz "^${TAG_VARIABLE}=$1\\$" /proc/[0-9]*/environ 2>/dev/null)`,
  'R= W=',
  'for f in $T; do p=${f%/environ}',
  '  for d in "$p"/fd/*; do',
  '    l=$(readlink "$d" 2>/dev/null) || continue',
  '    case $l in pipe:*) ;; *) continue ;; esac',
  // The access mode is the last octal digit of the descriptor's flags: 0 read, 1 write, 2 both.
  '    m=; { while IFS= read -r x; do case $x in flags:*) m=$x ;; esac; done < "$p/fdinfo/${d##*/}"; } 2>/dev/null',
  '    case $m in *0) R="$R $l" ;; *1) W="$W $l" ;; *2) R="$R $l" W="$W $l" ;; esac',
  '  done',
  'done',
  'for r in $R; do case "$W " in *" $r "*) ;; *) exit 3 ;; esac; done',
  'exit 0',
].join('\n');

/** The probe's argv for the command tagged `id`. */
export function stdinProbeArgv(shell: string, id: string): string[] {
  return [shell, '-c', STDIN_PROBE, STDIN_PROBE_NAME, id];
}
