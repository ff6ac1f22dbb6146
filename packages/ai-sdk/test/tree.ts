// A command's process tree as the command itself wrote it (one pid a line), and a /proc poll until
// it is gone: for the tests of what ends the exec tool's command.
import { readFileSync } from 'node:fs';
import { procStat } from '@sandstream/test-support/processes';

/** One process of a command's tree: its pid and start time (to tell a reused pid apart). */
export interface Member {
  readonly pid: number;
  readonly start: string | undefined;
}

/** The processes whose pids `file` holds, one a line, as they are now. */
export function treeIn(file: string): Member[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map(Number)
    .map((pid) => ({ pid, start: procStat(pid)?.[19] }));
}

/** Gone: no such process, a zombie (state Z, or X), or another process under a reused pid. */
export function gone({ pid, start }: Member): boolean {
  const fields = procStat(pid);
  return fields === undefined || fields[0] === 'Z' || fields[0] === 'X' || fields[19] !== start;
}

/** Polls /proc until every member is gone or `deadline` (a performance.now() time) passed; gives those still live. */
export async function survivors(tree: readonly Member[], deadline: number): Promise<Member[]> {
  for (;;) {
    const live = tree.filter((member) => !gone(member));
    if (live.length === 0 || performance.now() >= deadline) return live;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The margin of a bound: five times a round trip measured on this machine under its load, at least half a second. */
export function marginOf(latencyMs: number): number {
  return Math.max(500, 5 * latencyMs);
}
