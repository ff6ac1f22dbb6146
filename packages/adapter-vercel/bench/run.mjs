// Benchmark of @sandstream/adapter-vercel against the raw @vercel/sandbox SDK,
// both over the same local emulator of the Vercel Sandbox API, in one run.
//
//   npm run bench -w @sandstream/adapter-vercel            full run
//   npm run bench -w @sandstream/adapter-vercel -- --quick  smoke run
//
// Figures:
// - streaming throughput: one command writes SIZE bytes of text; the raw SDK
//   reads them with Command.logs(), the adapter with `for await` over
//   stream(). Target: the adapter >= 0.9x the raw SDK.
// - round trip: the adapter's run(['true']) against the raw runCommand('true').
//
// The two sides alternate so they share machine noise; medians are printed.
// The script only reports: it exits 0 even when a figure misses its target.
import { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { createVercelSandbox } from '../dist/index.js';
import { VercelEmulator } from '../dist/emulator/index.js';

const quick = process.argv.includes('--quick');
const MiB = 1024 * 1024;
const SIZE = (quick ? 8 : 64) * MiB;
const THROUGHPUT_RUNS = quick ? 2 : 5;
const ROUND_TRIPS = quick ? 5 : 30;
// Text output: a 64-byte line repeated (the wire carries text).
const WRITER = ['sh', '-c', `yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde | head -c ${SIZE}`];

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function rawThroughput(raw) {
  const started = performance.now();
  const command = await raw.runCommand({ cmd: WRITER[0], args: WRITER.slice(1), detached: true });
  let bytes = 0;
  for await (const log of command.logs()) bytes += Buffer.byteLength(log.data);
  await command.wait();
  const seconds = (performance.now() - started) / 1000;
  if (bytes !== SIZE) throw new Error(`raw SDK read ${bytes} bytes, expected ${SIZE}`);
  return SIZE / MiB / seconds;
}

async function adapterThroughput(sandbox) {
  const started = performance.now();
  const proc = sandbox.stream(WRITER);
  let bytes = 0;
  try {
    for await (const chunk of proc) bytes += chunk.data.byteLength;
    await proc.wait();
  } finally {
    await proc[Symbol.asyncDispose]();
  }
  const seconds = (performance.now() - started) / 1000;
  if (bytes !== SIZE) throw new Error(`adapter read ${bytes} bytes, expected ${SIZE}`);
  return SIZE / MiB / seconds;
}

async function rawRoundTrip(raw) {
  const started = performance.now();
  const done = await raw.runCommand('true');
  if (done.exitCode !== 0) throw new Error('raw true failed');
  return performance.now() - started;
}

async function adapterRoundTrip(sandbox) {
  const started = performance.now();
  const result = await sandbox.run(['true']);
  if (result.exitCode !== 0) throw new Error('adapter true failed');
  return performance.now() - started;
}

const emulator = await VercelEmulator.start();
let sandbox;
try {
  const raw = await VercelSdkSandbox.create({ ...emulator.credentials, fetch: emulator.fetch });
  sandbox = await createVercelSandbox({ ...emulator.credentials, fetch: emulator.fetch });
  // Warm both paths (connections, the first spawn) before timing.
  await rawRoundTrip(raw);
  await adapterRoundTrip(sandbox);

  const raws = [];
  const ours = [];
  for (let i = 0; i < THROUGHPUT_RUNS; i++) {
    raws.push(await rawThroughput(raw));
    ours.push(await adapterThroughput(sandbox));
  }
  const rawRt = [];
  const ourRt = [];
  for (let i = 0; i < ROUND_TRIPS; i++) {
    rawRt.push(await rawRoundTrip(raw));
    ourRt.push(await adapterRoundTrip(sandbox));
  }
  await raw.stop();

  const rawMbs = median(raws);
  const ourMbs = median(ours);
  const ratio = ourMbs / rawMbs;
  const rows = [
    ['figure', 'raw @vercel/sandbox', '@sandstream/adapter-vercel', 'ratio', 'target'],
    [
      `streaming ${SIZE / MiB} MiB (median of ${THROUGHPUT_RUNS})`,
      `${rawMbs.toFixed(1)} MiB/s`,
      `${ourMbs.toFixed(1)} MiB/s`,
      `${ratio.toFixed(2)}x`,
      `>= 0.90x ${ratio >= 0.9 ? 'met' : 'MISSED'}`,
    ],
    [
      `round trip of true (median of ${ROUND_TRIPS})`,
      `${median(rawRt).toFixed(1)} ms`,
      `${median(ourRt).toFixed(1)} ms`,
      `${(median(ourRt) / median(rawRt)).toFixed(2)}x`,
      '(reported)',
    ],
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column])).join('  '));
  console.log(
    '\nThe adapter\'s round trip includes what the raw call does not do: a detached start, the log stream, the exit,' +
      '\nclosing the command\'s standard input, and one helper that confirms nothing of its tree is alive.',
  );
} finally {
  await sandbox?.close();
  await emulator.close();
}
