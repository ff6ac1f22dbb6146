/**
 * The helpers of bench/wall-time.run.ts: one whole run of the kit, timed, and
 * what a row says about it.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { ConformanceReport, Sandbox } from '@sandstream/types';
import { runConformance } from '../src/index.js';
import { Lab } from '../test/broken/index.js';

/** One whole run: its report, the most cases that ran at once, or why the kit gave no report. */
export interface KitRun {
  readonly report?: ConformanceReport;
  /** Why runConformance threw instead of reporting (an adapter it cannot report on). */
  readonly thrown?: string;
  /** The report's duration, or the time until the throw. */
  readonly wallMs: number;
  readonly most: number;
}

/** One whole run of the kit against the sandboxes of `factory`, each made in a lab of its own, cleaned up after. */
export async function timeKit(label: string, concurrency: number | 'auto', factory: (lab: Lab) => Sandbox): Promise<KitRun> {
  const lab = new Lab(`bench-${label}`);
  let running = 0;
  let most = 0;
  const started = performance.now();
  try {
    const report = await runConformance({
      factory: () => factory(lab),
      concurrency,
      onCaseStart: () => (most = Math.max(most, ++running)),
      onCaseEnd: (result) => void (result.status !== 'disabled' && running--),
    });
    const out = process.env['BENCH_OUT'];
    if (out !== undefined) writeFileSync(join(out, `${label.replace(/[^a-z0-9-]/gi, '-')}-${concurrency}.json`), JSON.stringify(report, null, 2));
    return { report, wallMs: report.durationMs, most };
  } catch (error) {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { thrown: text.split('\n')[0]!.slice(0, 160), wallMs: performance.now() - started, most };
  } finally {
    await lab.cleanup();
  }
}

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
export const ratio = (run: KitRun, local: KitRun): string => `${(run.wallMs / local.wallMs).toFixed(2)}x`;
/** Cases that failed, or whose harness failed. */
export const notPassing = (report: ConformanceReport): string[] =>
  report.cases.filter((c) => c.status === 'fail' || c.status === 'error').map((c) => c.id);
/** Cases that ran into the per-case time limit instead of failing on what they awaited. */
export const atLimit = (report: ConformanceReport): number => report.cases.filter((c) => /did not finish within/.test(c.message ?? '')).length;
/** The `n` cases that took longest, with their durations. */
export const slowest = (report: ConformanceReport, n = 3): string =>
  [...report.cases]
    .sort((a, b) => b.durationMs - a.durationMs)
    .slice(0, n)
    .map((c) => `${c.id} ${seconds(c.durationMs)}`)
    .join(', ');
export const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' ');

/** Rows as aligned columns, the first row the header. */
export function columns(table: readonly (readonly string[])[]): string {
  const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  return table.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

/** The row of one adapter in the broken mode: wall time, ratio, failing cases, cases at the limit, the slowest three. */
export function brokenRow(name: string, run: KitRun, local: KitRun): string[] {
  const over = run.wallMs / local.wallMs > 3 ? ' (over 3x)' : '';
  if (run.report === undefined) return [name, seconds(run.wallMs), ratio(run, local) + over, '-', '-', `no report: ${run.thrown ?? ''}`];
  const failing = notPassing(run.report);
  return [name, seconds(run.wallMs), ratio(run, local) + over, String(failing.length), String(atLimit(run.report)), slowest(run.report)];
}
export const BROKEN_HEADER = ['adapter', 'wall time', 'ratio to local', 'failing', 'at case limit', 'slowest three cases'];
