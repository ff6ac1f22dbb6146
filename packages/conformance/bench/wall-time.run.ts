/**
 * The kit's wall time, in one run, against: the local adapter; two broken
 * adapters that leave the kit waiting (test/broken/stalling.ts: one holds
 * each chunk back until the next, one whose wait() settles only once the
 * output was read); and the local adapter with 50 ms added to every driver
 * call (test/fixtures/latency.ts). Each row's ratio is against the local
 * adapter's run in the same invocation. Run with
 * `npm run bench:wall-time -w @sandstream/conformance`.
 *
 * BENCH_CONCURRENCY=1,2,4,8 compares several concurrencies (default: auto,
 * the kit's default); BENCH_LATENCY_MS changes the injected delay (default
 * 50); BENCH_ROWS=local,withholds-chunks,... runs only some rows (the local
 * one always runs, as the baseline); BENCH_OUT=<dir> writes each run's
 * report there as JSON, to see which cases took the time.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { test } from 'vitest';
import type { ConformanceReport, Sandbox } from '@sandstream/types';
import { runConformance } from '../src/index.js';
import { Lab } from '../test/broken/index.js';
import { waitAfterRead, withholdingChunks } from '../test/broken/stalling.js';
import { latencySandbox } from '../test/fixtures/latency.js';

const concurrencies = (process.env['BENCH_CONCURRENCY'] ?? 'auto').split(',').map((c) => (c === 'auto' ? 'auto' : Number(c)));
const latencyMs = Number(process.env['BENCH_LATENCY_MS'] ?? 50);

/** The rows after the baseline: a name and the sandbox of every case. */
const ROWS: ReadonlyArray<readonly [string, (lab: Lab) => Sandbox]> = [
  ['withholds-chunks', withholdingChunks],
  ['wait-after-read', waitAfterRead],
  [`local +${latencyMs} ms per driver call`, (lab) => latencySandbox(lab, latencyMs)],
];
const chosen = process.env['BENCH_ROWS']?.split(',');
const rows = ROWS.filter(([name]) => chosen === undefined || chosen.some((c) => name.startsWith(c)));

/** One whole run, and the most cases that ran at once in it. */
async function timeKit(label: string, concurrency: number | 'auto', factory: (lab: Lab) => Sandbox): Promise<{ report: ConformanceReport; most: number }> {
  const lab = new Lab(`bench-${label}`);
  let running = 0;
  let most = 0;
  try {
    const report = await runConformance({
      factory: () => factory(lab),
      concurrency,
      onCaseStart: () => (most = Math.max(most, ++running)),
      onCaseEnd: (result) => void (result.status !== 'disabled' && running--),
    });
    const out = process.env['BENCH_OUT'];
    if (out !== undefined) writeFileSync(join(out, `${label.replace(/[^a-z0-9-]/gi, '-')}-${concurrency}.json`), JSON.stringify(report, null, 2));
    return { report, most };
  } finally {
    await lab.cleanup();
  }
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const notPassing = (report: ConformanceReport): string[] => report.cases.filter((c) => c.status === 'fail' || c.status === 'error').map((c) => c.id);
/** Cases that ran into the per-case time limit instead of failing on what they awaited. */
const atLimit = (report: ConformanceReport): number => report.cases.filter((c) => /did not finish within/.test(c.message ?? '')).length;
const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' ');

test('wall time of the kit: local, broken adapters that stall, injected latency', { timeout: 60 * 60_000 }, async () => {
  const table: string[][] = [['adapter', 'concurrency', 'cases at once', 'wall time', 'ratio to local', 'at case limit', 'not passing']];
  const loads = [load()];
  for (const concurrency of concurrencies) {
    const local = await timeKit('local', concurrency, (lab) => lab.local());
    const row = (name: string, run: { report: ConformanceReport; most: number }): string[] => {
      const failing = notPassing(run.report);
      return [
        name,
        String(concurrency),
        String(run.most),
        seconds(run.report.durationMs),
        `${(run.report.durationMs / local.report.durationMs).toFixed(2)}x`,
        String(atLimit(run.report)),
        failing.length === 0 ? '-' : `${failing.length}: ${failing.join(', ')}`,
      ];
    };
    table.push(row('adapter-local', local));
    for (const [name, factory] of rows) table.push(row(name, await timeKit(name, concurrency, factory)));
    loads.push(load());
  }
  const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  const text = table.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
  process.stdout.write(
    `\nSandstream conformance kit, whole run (${new Date().toISOString()}; load average over 1, 5 and 15 min: ${loads.join(', then ')}):\n\n${text}\n\n`,
  );
});
