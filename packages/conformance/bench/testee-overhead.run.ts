/**
 * What the testee bridge costs (ADR-0038): the kit's whole run against the
 * local adapter directly, and through the TypeScript testee serving the same
 * adapter (`sandstream-testee`), side by side in pairs, alternating which
 * goes first. Prints every pair's ratio and the median, with the load.
 * Target: 1.5x or less. When python3 (3.11 or later) is here, a last row
 * runs the Python adapter's testee, for its own wall time (another adapter:
 * not a ratio of the bridge).
 *
 * Run with `npm run bench:testee -w @sandstream/conformance`;
 * BENCH_PAIRS=<n> sets the pairs (default 3).
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { test } from 'vitest';
import type { ConformanceReport } from '@sandstream/types';
import { runConformance } from '../src/index.js';

const PAIRS = Number(process.env['BENCH_PAIRS'] ?? 3);
const TESTEE_CLI = fileURLToPath(new URL('../dist/testee-cli.js', import.meta.url));
const LOCAL = fileURLToPath(import.meta.resolve('@sandstream/adapter-local'));
const PYTHON_DIR = fileURLToPath(new URL('../../../python', import.meta.url));

const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' ');
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const problems = (report: ConformanceReport): string => {
  const bad = report.cases.filter((c) => c.status === 'fail' || c.status === 'error').map((c) => c.id);
  return bad.length === 0 ? '-' : bad.join(', ');
};

async function direct(): Promise<ConformanceReport> {
  const { createLocalSandbox } = (await import('@sandstream/adapter-local')) as typeof import('@sandstream/adapter-local');
  return runConformance({ factory: () => createLocalSandbox() });
}

function throughTestee(): Promise<ConformanceReport> {
  return runConformance({ testee: { command: process.execPath, args: [TESTEE_CLI, LOCAL] } });
}

function pythonReady(): boolean {
  const probe = spawnSync('python3', ['-c', 'import sys; print(sys.version_info >= (3, 11))'], { encoding: 'utf8' });
  return probe.status === 0 && probe.stdout.trim() === 'True';
}

test('the testee bridge against a direct run of the same adapter', { timeout: 60 * 60_000 }, async () => {
  const rows: string[][] = [['pair', 'first', 'direct', 'through the testee', 'ratio', 'not passing (direct / testee)']];
  const ratios: number[] = [];
  const loads = [load()];
  for (let pair = 1; pair <= PAIRS; pair++) {
    const testeeFirst = pair % 2 === 0;
    const first = testeeFirst ? await throughTestee() : await direct();
    const second = testeeFirst ? await direct() : await throughTestee();
    const [d, t] = testeeFirst ? [second, first] : [first, second];
    const ratio = t.durationMs / d.durationMs;
    ratios.push(ratio);
    rows.push([String(pair), testeeFirst ? 'testee' : 'direct', seconds(d.durationMs), seconds(t.durationMs), `${ratio.toFixed(2)}x`, `${problems(d)} / ${problems(t)}`]);
    loads.push(load());
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  const misses = ratios.filter((r) => r > 1.5).length;
  let python = 'python3 3.11 or later is not here: the Python testee row is not run';
  if (pythonReady()) {
    const report = await runConformance({ testee: { command: 'python3', args: ['-m', 'sandstream_testee'], env: { ...(process.env as Record<string, string>), PYTHONPATH: PYTHON_DIR } } });
    python = `the Python adapter through its testee: ${seconds(report.durationMs)}, ${report.summary.pass} passed, not passing: ${problems(report)}`;
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const text = rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
  process.stdout.write(
    `\nThe kit through a testee against directly, adapter-local (${new Date().toISOString()}; load average over 1, 5 and 15 min: ${loads.join(', then ')}):\n\n${text}\n\n` +
      `median ratio ${median.toFixed(2)}x over ${ratios.length} pairs (target 1.5x or less; ${misses} pair(s) over it)\n${python}\n\n`,
  );
});
