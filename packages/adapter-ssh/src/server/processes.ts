// What /proc says about the processes of a test sshd: who is whose child, which mount namespace each
// is in, and an end for all of them by pid that waits until they are gone.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** One process as `/proc/<pid>/stat` shows it. */
export interface ProcessStat {
  readonly pid: number;
  readonly ppid: number;
  /** `R`, `S`, `D`, `Z`... */
  readonly state: string;
  /** Clock ticks after boot: with the pid, names one process even once the pid is reused. */
  readonly startTime: string;
}

/** `/proc/<pid>/stat`, or undefined once the process is gone. */
export function processStat(pid: number): ProcessStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may hold spaces and parentheses itself.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid, state: fields[0] ?? '?', ppid: Number(fields[1]), startTime: fields[19] ?? '' };
}

/** Every process now in /proc. */
export function allProcesses(): ProcessStat[] {
  const found: ProcessStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = processStat(Number(name));
    if (stat !== undefined) found.push(stat);
  }
  return found;
}

/** The pids whose parent is `pid`, zombies left out. */
export function childrenOf(pid: number, processes: readonly ProcessStat[] = allProcesses()): number[] {
  return processes.filter((p) => p.ppid === pid && p.state !== 'Z').map((p) => p.pid);
}

/** `roots` and every process under them, parents before children. */
export function treeOf(roots: readonly number[], processes: readonly ProcessStat[] = allProcesses()): number[] {
  const byParent = new Map<number, number[]>();
  for (const p of processes) byParent.set(p.ppid, [...(byParent.get(p.ppid) ?? []), p.pid]);
  const seen = new Set<number>();
  const queue = roots.filter((pid) => processes.some((p) => p.pid === pid));
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    queue.push(...(byParent.get(pid) ?? []));
  }
  return [...seen];
}

/** The mount namespace of `pid` (`mnt:[4026532...]`), or undefined (gone, or a zombie). */
export function mountNamespace(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/mnt`);
  } catch {
    return undefined;
  }
}

/** The live processes in any of `namespaces`. */
export function processesIn(namespaces: ReadonlySet<string>, processes: readonly ProcessStat[] = allProcesses()): number[] {
  if (namespaces.size === 0) return [];
  return processes.filter((p) => p.state !== 'Z' && namespaces.has(mountNamespace(p.pid) ?? '')).map((p) => p.pid);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * SIGKILLs `roots`, every process under them and every process in `namespaces`, round after round until
 * none is left (a process forked meanwhile is found in the next round), then waits until each one it
 * killed has exited, for at most `timeoutMs`, and then until it is reaped too (gone from /proc: their new
 * parent, init, may reap late, or never in a container whose init does not), for at most `reapMs` more.
 * Never this process itself. Resolves with the pids that had not exited (a process stuck in the kernel).
 */
export async function killAll(roots: readonly number[], namespaces: ReadonlySet<string>, timeoutMs = 10_000, reapMs = 2_000): Promise<number[]> {
  const killed = new Map<number, string>();
  for (let round = 0; round < 100; round++) {
    const processes = allProcesses();
    const targets = new Set([...treeOf(roots, processes), ...processesIn(namespaces, processes)]);
    targets.delete(process.pid);
    // A process SIGKILLed in an earlier round may still be dying: killing it again does no harm.
    const live = processes.filter((p) => targets.has(p.pid) && p.state !== 'Z');
    if (live.length === 0) break;
    for (const { pid, startTime } of live) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
      killed.set(pid, startTime);
    }
    await sleep(round === 0 ? 5 : 20);
  }
  /** The killed processes still in /proc: those that have not exited, or with `zombies`, also those not reaped. */
  const still = (zombies: boolean): Array<[number, string]> =>
    [...killed].filter(([pid, start]) => {
      const stat = processStat(pid);
      return stat?.startTime === start && (zombies || stat.state !== 'Z');
    });
  for (const [zombies, ms] of [[false, timeoutMs], [true, reapMs]] as const) {
    const deadline = Date.now() + ms;
    while (still(zombies).length > 0 && Date.now() < deadline) await sleep(20);
  }
  return still(false).map(([pid]) => pid);
}
