// Benchmark of @sandstream/adapter-local against raw child_process.spawn.
//
//   npm run bench -w @sandstream/adapter-local            full run
//   npm run bench -w @sandstream/adapter-local -- --quick  smoke run (small sizes, few repetitions)
//
// Options: --quick, --only=throughput,roundtrip,capture,teardown,rss,isolation,
// --against=DIR: another build of the adapter (its dist directory), whose isolated
// create-run-close joins the isolation job's rotation, with the paired ratios.
// BENCH_DEBUG=1 prints every teardown observation to stderr.
//
// Every figure is measured for Sandstream and for a raw-spawn baseline in the
// same run, alternating the two so they share machine noise. The script only
// reports: it exits 0 even when a figure misses its target.
//
// No GC is forced between timed repetitions: a forced full GC leaves the
// allocator in a state that slows the next 1 GiB raw read by up to 2x on
// some machines, which would flatter Sandstream. --expose-gc is used only to
// settle the heap before the RSS baseline is taken.
import os from 'node:os';
import { HAS_PROCFS } from './procfs.mjs';
import { createLocalSandbox, fmtBytes, GiB, leftovers, loadAdapter, loadOtherBuild, MiB } from './common.mjs';
import { benchThroughput, benchRoundTrip, benchCapture } from './calls.mjs';
import { benchTeardown } from './teardown.mjs';
import { benchRss, rssChild } from './rss.mjs';
import { benchIsolation } from './isolation.mjs';

// ---- report ------------------------------------------------------------------------

function table(rows) {
  const head = { name: 'figure', sandstream: 'sandstream', raw: 'raw spawn', ratio: 'ratio', target: 'target', result: 'result' };
  const body = rows.map((row) => ({ ...row, result: row.pass ? 'PASS' : 'MISS  <<<' }));
  const cols = ['name', 'sandstream', 'raw', 'ratio', 'target', 'result'];
  const width = Object.fromEntries(cols.map((c) => [c, Math.max(...[head, ...body].map((row) => String(row[c]).length))]));
  const line = (row) =>
    cols
      .map((c, i) => (i === 0 || i === cols.length - 1 ? String(row[c]).padEnd(width[c]) : String(row[c]).padStart(width[c])))
      .join('  ')
      .trimEnd();
  return [line(head), cols.map((c) => '-'.repeat(width[c])).join('  '), ...body.map(line)].join('\n');
}

function parseArgs(argv) {
  const args = { quick: false, only: undefined, rssChild: undefined, bytes: undefined, against: undefined };
  for (const arg of argv) {
    if (arg === '--quick') args.quick = true;
    else if (arg.startsWith('--only=')) args.only = new Set(arg.slice(7).split(','));
    else if (arg.startsWith('--rss-child=')) args.rssChild = arg.slice(12);
    else if (arg.startsWith('--bytes=')) args.bytes = Number(arg.slice(8));
    else if (arg.startsWith('--against=')) args.against = arg.slice(10);
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write('usage: node --expose-gc bench/run.mjs [--quick] [--only=throughput,roundtrip,capture,teardown,rss,isolation] [--against=DIR]\n');
      process.exit(0);
    } else {
      process.stderr.write(`bench: unknown argument ${arg}\n`);
      process.exit(2);
    }
  }
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  await loadAdapter();
  if (args.rssChild !== undefined) {
    await rssChild(args.rssChild, args.bytes);
    return;
  }
  const cfg = args.quick
    ? {
        streamBytes: 64 * MiB,
        streamReps: 3,
        roundTripWarmup: 10,
        roundTripIters: 60,
        captureBytes: 16 * MiB,
        captureReps: 3,
        graceMs: 200,
        teardownReps: 5,
        teardownSlowReps: 3,
        rssBytes: 64 * MiB,
        rssReps: 1,
        isolationRoundTrips: 40,
        isolationCreates: 9,
        isolationStreamReps: 3,
      }
    : {
        streamBytes: 1 * GiB,
        streamReps: 9,
        roundTripWarmup: 50,
        roundTripIters: 400,
        captureBytes: 100 * MiB,
        captureReps: 7,
        graceMs: 200,
        teardownReps: 31,
        teardownSlowReps: 11,
        rssBytes: 1 * GiB,
        rssReps: 3,
        isolationRoundTrips: 200,
        isolationCreates: 31,
        isolationStreamReps: 7,
      };
  if (args.against !== undefined) cfg.against = await loadOtherBuild(args.against);
  const want = (name) => args.only === undefined || args.only.has(name);

  const cpus = os.cpus();
  const started = new Date();
  console.log('@sandstream/adapter-local benchmark: Sandstream vs raw child_process.spawn');
  console.log(`date:    ${started.toISOString()}`);
  console.log(
    `machine: ${os.platform()} ${os.release()} ${os.arch()}, ${cpus.length} cpus (${cpus[0]?.model?.trim() ?? 'unknown'}), ` +
      `${fmtBytes(os.totalmem())} RAM`,
  );
  console.log(`node:    ${process.version}${globalThis.gc ? '' : ' (without --expose-gc: no GC between repetitions)'}`);
  console.log(`mode:    ${args.quick ? 'quick (reduced sizes, smoke run only)' : 'full'}`);
  console.log(`load:    ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} (1/5/15 min) at start`);
  console.log('');

  const sb = createLocalSandbox();
  const rows = [];
  const details = [];
  const add = ({ row, rows: many, details: more }) => {
    if (row) rows.push(row);
    if (many) rows.push(...many);
    details.push(...more);
  };
  const step = (name) => process.stderr.write(`bench: measuring ${name}...\n`);
  try {
    if (want('throughput')) {
      step('stream() throughput');
      add(await benchThroughput(sb, cfg));
    }
    if (want('roundtrip')) {
      step("run(['true']) round trip");
      add(await benchRoundTrip(sb, cfg));
    }
    if (want('capture')) {
      step('run() capture');
      add(await benchCapture(sb, cfg));
    }
    if (want('teardown')) {
      step('teardown');
      add(await benchTeardown(cfg));
    }
    if (want('rss')) {
      step('peak RSS with a slow consumer');
      add(await benchRss(cfg));
    }
    if (want('isolation')) {
      step("isolation: namespaces vs plain (round trip, creation and close() beside bubblewrap's one-shot sandbox, throughput)");
      add(await benchIsolation(sb, cfg));
    }
  } finally {
    await sb.close();
  }

  console.log(table(rows));
  console.log('');
  for (const line of details) console.log(line);
  const left = leftovers();
  console.log('');
  console.log(
    `load:    ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} (1/5/15 min) at end; ` +
      `${((Date.now() - started.getTime()) / 1000).toFixed(0)} s elapsed; ` +
      (HAS_PROCFS ? `processes left running by the benchmark: ${left.length}` : 'process check unavailable'),
  );
  const misses = rows.filter((row) => !row.pass).length;
  console.log(misses === 0 ? 'all figures meet their targets' : `${misses} figure(s) MISS their target`);
}

await main();
