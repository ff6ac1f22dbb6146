/**
 * What the soak measures in its own process: open file descriptors, active
 * libuv resources, the heap after full collections, and how late a 10 ms
 * timer fires (the event loop's responsiveness).
 */
import { readdirSync, readlinkSync } from 'node:fs';
import { Histogram, type Percentiles } from './stats.js';

/** Open file descriptors of this process (the entries of /proc/self/fd). */
export function fdCount(): number {
  return readdirSync('/proc/self/fd').length;
}

/** What each open descriptor points at (`socket:[...]`, `pipe:[...]`, a path), for naming a leak. */
export function fdTargets(): string[] {
  const targets: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      targets.push(readlinkSync(`/proc/self/fd/${fd}`).replace(/\[\d+\]$/, ''));
    } catch {
      // the directory's own descriptor, closed by now
    }
  }
  return targets;
}

/**
 * Active resources of this process by type (`process.getActiveResourcesInfo()`:
 * handles such as sockets, child processes and pipes, plus requests and timers),
 * without the probes' own timer.
 */
export function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

/** The total of {@link activeResources}. */
export function resourceTotal(resources: Readonly<Record<string, number>>): number {
  return Object.values(resources).reduce((sum, n) => sum + n, 0);
}

/** Whether `global.gc` is available (node --expose-gc). */
export function canCollect(): boolean {
  return typeof (globalThis as { gc?: unknown }).gc === 'function';
}

/**
 * `heapUsed` after full collections, with turns of the event loop between them
 * so finalizers and the work they schedule run; undefined without `--expose-gc`.
 */
export async function settledHeap(rounds = 4): Promise<number | undefined> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return undefined;
  for (let i = 0; i < rounds; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  gc();
  return process.memoryUsage().heapUsed;
}

/** How late a 10 ms interval fires, sampled until {@link stop}. */
export class LoopDelayMonitor {
  static readonly INTERVAL_MS = 10;
  private readonly histogram = new Histogram();
  private readonly timer: NodeJS.Timeout;
  private last = performance.now();

  constructor() {
    this.timer = setInterval(() => {
      const now = performance.now();
      this.histogram.record(Math.max(0, now - this.last - LoopDelayMonitor.INTERVAL_MS));
      this.last = now;
    }, LoopDelayMonitor.INTERVAL_MS);
  }

  /** Stops sampling; returns the lateness percentiles in ms. */
  stop(): Percentiles {
    clearInterval(this.timer);
    return this.histogram.summary();
  }
}
