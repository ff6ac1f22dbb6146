/**
 * The kit's wall time against the local adapter, and against the same
 * adapter with 50 ms added to every driver call (test/fixtures/latency.ts),
 * side by side. Run with `npm run bench:wall-time -w @sandstream/conformance`.
 *
 * BENCH_CONCURRENCY=1,2,4,8 compares several concurrencies (default: auto,
 * the kit's default); BENCH_LATENCY_MS changes the injected delay (default 50).
 */
import { test } from 'vitest';
import type { ConformanceReport, Sandbox } from '@sandstream/types';
import { runConformance } from '../src/index.js';
import { Lab } from '../test/broken/index.js';
import { latencySandbox } from '../test/fixtures/latency.js';

const concurrencies = (process.env['BENCH_CONCURRENCY'] ?? 'auto').split(',').map((c) => (c === 'auto' ? 'auto' : Number(c)));
const latencyMs = Number(process.env['BENCH_LATENCY_MS'] ?? 50);

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
    return { report, most };
  } finally {
    await lab.cleanup();
  }
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const problems = (report: ConformanceReport): string =>
  report.cases
    .filter((c) => c.status === 'fail' || c.status === 'error')
    .map((c) => c.id)
    .join(', ');

test('wall time of the kit, local and with injected latency', { timeout: 30 * 60_000 }, async () => {
  const rows: string[][] = [['concurrency', 'cases at once', 'local', `+${latencyMs} ms per driver call`, 'ratio', 'not passing']];
  for (const concurrency of concurrencies) {
    const local = await timeKit('local', concurrency, (lab) => lab.local());
    const slow = await timeKit('latency', concurrency, (lab) => latencySandbox(lab, latencyMs));
    const failing = [problems(local.report) && `local: ${problems(local.report)}`, problems(slow.report) && `latency: ${problems(slow.report)}`]
      .filter(Boolean)
      .join('; ');
    rows.push([
      String(concurrency),
      `${local.most} / ${slow.most}`,
      seconds(local.report.durationMs),
      seconds(slow.report.durationMs),
      `${(slow.report.durationMs / local.report.durationMs).toFixed(2)}x`,
      failing || '-',
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const table = rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
  process.stdout.write(`\nSandstream conformance kit, whole run (${new Date().toISOString()}):\n\n${table}\n\n`);
});
