/**
 * What the machine's CPU does while the kit measures a backend: how much of
 * it a stream of trivial commands uses on this machine, and how much was left
 * idle. A backend whose round trip is spent computing here (a login shell and
 * a supervisor per command, an emulator in the same machine) gains nothing
 * from running cases side by side when the CPU is taken; one whose round trip
 * is spent waiting on a network does. `'auto'` concurrency is chosen from
 * this, not from the round trip alone (ADR-0029, "what auto measures").
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** The CPU time of every core of the machine, summed, at one moment. */
export interface CpuSample {
  /** Milliseconds the cores spent on anything but idling. */
  readonly busyMs: number;
  /** Milliseconds the cores spent idle. */
  readonly idleMs: number;
  /** When it was taken (`performance.now()`). */
  readonly at: number;
}

/** The CPUs this process may run on (Linux's `Cpus_allowed_list`), or undefined where unknown. */
function allowedCpus(): Set<number> | undefined {
  try {
    const line = /^Cpus_allowed_list:\s*(.+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (line === undefined) return undefined;
    const cpus = new Set<number>();
    for (const range of line.trim().split(',')) {
      const [from, to = from] = range.split('-').map(Number);
      for (let cpu = from!; cpu <= to!; cpu++) cpus.add(cpu);
    }
    return cpus;
  } catch {
    return undefined;
  }
}

const ALLOWED = process.platform === 'linux' ? allowedCpus() : undefined;

/**
 * Linux's counters from `/proc/stat`, for the CPUs this process may run on:
 * waiting for I/O counts as idle (`os.cpus()` counts it as neither, and so
 * understates what is idle while a disk is busy), steal and soft interrupts
 * as busy. In ticks of 1/100 s, as milliseconds.
 */
function procStat(): CpuSample | undefined {
  let text: string;
  try {
    text = readFileSync('/proc/stat', 'utf8');
  } catch {
    return undefined;
  }
  let busyMs = 0;
  let idleMs = 0;
  let seen = 0;
  for (const line of text.split('\n')) {
    const match = /^cpu(\d+)\s+(.*)$/.exec(line);
    if (match === null || (ALLOWED !== undefined && !ALLOWED.has(Number(match[1])))) continue;
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = match[2]!.trim().split(/\s+/).map(Number);
    busyMs += (user + nice + system + irq + softirq + steal) * 10;
    idleMs += (idle + iowait) * 10;
    seen++;
  }
  return seen === 0 ? undefined : { busyMs, idleMs, at: performance.now() };
}

/** The machine's CPU counters now, or undefined where the platform gives none. */
export function sampleCpu(): CpuSample | undefined {
  if (process.platform === 'linux') {
    const stat = procStat();
    if (stat !== undefined) return stat;
  }
  const cores = cpus();
  if (cores.length === 0) return undefined;
  let busyMs = 0;
  let idleMs = 0;
  for (const { times } of cores) {
    busyMs += times.user + times.nice + times.sys + times.irq;
    idleMs += times.idle;
  }
  return { busyMs, idleMs, at: performance.now() };
}

/** Busy and idle cores, on average, between two samples (2 busy cores: both cores fully used). */
export interface CoreUse {
  readonly busy: number;
  readonly idle: number;
}

/** The cores used and left idle between `from` and `to`. */
export function coresBetween(from: CpuSample, to: CpuSample): CoreUse {
  const wallMs = Math.max(1, to.at - from.at);
  return { busy: Math.max(0, to.busyMs - from.busyMs) / wallMs, idle: Math.max(0, to.idleMs - from.idleMs) / wallMs };
}

/** What a stream of trivial commands, one after another, costs the machine the kit runs on. */
export interface CommandCpu {
  /** Cores the commands kept busy beyond what the machine used before them (0 for a backend elsewhere). */
  readonly commandCores: number;
  /** Cores left idle while they ran. */
  readonly idleCores: number;
}

/** One quiet window and one of `work`, measured. */
async function measureOnce(work: () => Promise<void>, quietMs: number): Promise<CommandCpu | undefined> {
  const before = sampleCpu();
  await new Promise((resolve) => setTimeout(resolve, quietMs));
  const start = sampleCpu();
  await work();
  const end = sampleCpu();
  if (before === undefined || start === undefined || end === undefined) return undefined;
  const quiet = coresBetween(before, start);
  const loaded = coresBetween(start, end);
  return { commandCores: Math.max(0, loaded.busy - quiet.busy), idleCores: loaded.idle };
}

/**
 * The cost of `work` (trivial commands run one after another) on this
 * machine: the cores busy while it ran, less those busy over a quiet window
 * just before it (the machine's own load), and the cores left idle. Measured
 * twice, and the costlier reading kept (the higher cost, the fewer idle
 * cores): a burst of other work that ends between the quiet window and the
 * commands would otherwise make them look free. Undefined where the platform
 * has no CPU counters. Counts every CPU this process may run on; a cgroup's
 * CPU quota below that is not seen (README, "Known limits").
 */
export async function measureCommandCpu(work: () => Promise<void>, quietMs = 200): Promise<CommandCpu | undefined> {
  const first = await measureOnce(work, quietMs);
  const second = await measureOnce(work, quietMs);
  if (first === undefined || second === undefined) return first ?? second;
  return { commandCores: Math.max(first.commandCores, second.commandCores), idleCores: Math.min(first.idleCores, second.idleCores) };
}
