/**
 * What the machine's CPU does while the kit measures a backend: how much of
 * it a stream of trivial commands uses on this machine, and how much was left
 * idle. A backend whose round trip is spent computing here (a login shell and
 * a supervisor per command, an emulator in the same machine) gains nothing
 * from running cases side by side when the CPU is taken; one whose round trip
 * is spent waiting on a network does. `'auto'` concurrency is chosen from
 * this, not from the round trip alone (ADR-0029, "what auto measures").
 */
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

/** The machine's CPU counters now, or undefined where the platform gives none. */
export function sampleCpu(): CpuSample | undefined {
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

/**
 * The cost of `work` (trivial commands run one after another) on this
 * machine: the cores busy while it ran, less those busy over a quiet window
 * just before it (the machine's own load), and the cores left idle.
 * Undefined where the platform has no CPU counters.
 */
export async function measureCommandCpu(work: () => Promise<void>, quietMs = 200): Promise<CommandCpu | undefined> {
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
