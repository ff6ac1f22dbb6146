/**
 * The kit's wall time, in one run, against: the local adapter; two broken
 * adapters that leave the kit waiting (test/broken/stalling.ts: one holds
 * each chunk back until the next, one whose wait() settles only once the
 * output was read); one whose kill drops its link to the command instead of
 * signalling it (test/broken/kill-and-callbacks.ts: each command the kit ends
 * waits out the grace period and the kill wait); and the local adapter with
 * 50 ms added to every driver call (test/fixtures/latency.ts). Each row's
 * ratio is against the local adapter's run in the same invocation. Run with
 * `npm run bench:wall-time -w @sandstream/conformance`.
 *
 * BENCH_CONCURRENCY=1,2,4,8 compares several concurrencies (default: auto,
 * the kit's default); BENCH_LATENCY_MS changes the injected delay (default
 * 50); BENCH_ROWS=local,withholds-chunks,... runs only some rows (the local
 * one always runs, as the baseline); BENCH_OUT=<dir> writes each run's
 * report there as JSON, to see which cases took the time.
 *
 * BENCH_ROWS=broken runs the whole kit against the local adapter and then
 * against every adapter of BROKEN_ADAPTERS (test/broken/index.ts), each with
 * the kit's defaults, as an adapter's author runs it. It prints a row as each
 * run ends, and the whole table at the end: the wall time, the ratio to the
 * local run (the goal is at most 3x), the cases that failed (or whose harness
 * failed: without an owner module, owner.crash errors on every row, the
 * local one included), the cases that reached the case limit, and the three
 * slowest cases. BENCH_ADAPTERS=name,prefix,... picks some of the broken
 * adapters. An adapter runConformance cannot report on (manifest-invalid:
 * the report fails its own schema) gets its time until the throw.
 */
import { test } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import { captureWarnings } from '@sandstream/test-support/warnings';
import { BROKEN_ADAPTERS, Lab } from '../test/broken/index.js';
import { killDropsLink } from '../test/broken/kill-and-callbacks.js';
import { waitAfterRead, withholdingChunks } from '../test/broken/stalling.js';
import { latencySandbox } from '../test/fixtures/latency.js';
import { atLimit, BROKEN_HEADER, brokenRow, columns, load, notPassing, ratio, seconds, timeKit, type KitRun } from './wall-time-kit.js';

const concurrencies = (process.env['BENCH_CONCURRENCY'] ?? 'auto').split(',').map((c) => (c === 'auto' ? 'auto' : Number(c)));
const latencyMs = Number(process.env['BENCH_LATENCY_MS'] ?? 50);

/** The rows after the baseline: a name and the sandbox of every case. */
const ROWS: ReadonlyArray<readonly [string, (lab: Lab) => Sandbox]> = [
  ['withholds-chunks', withholdingChunks],
  ['wait-after-read', waitAfterRead],
  ['kill-drops-link', killDropsLink],
  [`local +${latencyMs} ms per driver call`, (lab) => latencySandbox(lab, latencyMs)],
];
const chosen = process.env['BENCH_ROWS']?.split(',');
const brokenMode = chosen?.includes('broken') === true;
const rows = ROWS.filter(([name]) => chosen === undefined || chosen.some((c) => name.startsWith(c)));
const pickedAdapters = process.env['BENCH_ADAPTERS']?.split(',');
const adapters = BROKEN_ADAPTERS.filter((a) => pickedAdapters === undefined || pickedAdapters.some((p) => a.name.startsWith(p)));

const header = (loads: readonly string[]): string =>
  `\nSandstream conformance kit, whole run (${new Date().toISOString()}; load average over 1, 5 and 15 min: ${loads.join(', then ')}):\n\n`;

test.skipIf(brokenMode)('wall time of the kit: local, broken adapters that stall or drop the link, injected latency', { timeout: 60 * 60_000 }, async () => {
  const table: string[][] = [['adapter', 'concurrency', 'cases at once', 'wall time', 'ratio to local', 'at case limit', 'not passing']];
  const loads = [load()];
  for (const concurrency of concurrencies) {
    const local = await timeKit('local', concurrency, (lab) => lab.local());
    const row = (name: string, run: KitRun): string[] => {
      const failing = run.report === undefined ? [] : notPassing(run.report);
      return [
        name,
        String(concurrency),
        String(run.most),
        seconds(run.wallMs),
        ratio(run, local),
        run.report === undefined ? '-' : String(atLimit(run.report)),
        run.report === undefined ? `no report: ${run.thrown ?? ''}` : failing.length === 0 ? '-' : `${failing.length}: ${failing.join(', ')}`,
      ];
    };
    table.push(row('adapter-local', local));
    for (const [name, factory] of rows) table.push(row(name, await timeKit(name, concurrency, factory)));
    loads.push(load());
  }
  process.stdout.write(`${header(loads)}${columns(table)}\n\n`);
});

test.runIf(brokenMode)('wall time of the kit: local, then every broken adapter of the kit\'s own tests', { timeout: 12 * 60 * 60_000 }, async () => {
  // Broken adapters leak Processes on purpose: the runtime's warnings for them are expected.
  const leaks = captureWarnings(['SANDSTREAM_PROCESS_LEAKED']);
  try {
    for (const concurrency of concurrencies) {
      const loads = [load()];
      const started = Date.now();
      const local = await timeKit('local', concurrency, (lab) => lab.local());
      const table: string[][] = [BROKEN_HEADER, brokenRow('adapter-local', local, local)];
      process.stdout.write(`\nbroken mode, concurrency ${concurrency}, ${adapters.length} broken adapters:\n${table.map((r) => r.join(' | ')).join('\n')}\n`);
      for (const adapter of adapters) {
        const row = brokenRow(adapter.name, await timeKit(adapter.name, concurrency, adapter.create), local);
        table.push(row);
        process.stdout.write(`${row.join(' | ')}\n`);
      }
      loads.push(load());
      const over = table.slice(2).filter((r) => r[2]!.endsWith('(over 3x)')).length;
      process.stdout.write(
        `${header(loads)}${columns(table)}\n\n${over} of ${adapters.length} broken adapters over 3x; ` +
          `the whole mode took ${seconds(Date.now() - started)} (concurrency ${concurrency}).\n\n`,
      );
    }
  } finally {
    leaks.release();
  }
});
