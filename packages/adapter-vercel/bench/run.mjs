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
// - requests per command, counted by the emulator per route: run(['true'])
//   against the raw runCommand('true'), and a short stream() against the raw
//   SDK doing the same work (a detached runCommand for the id, logs(), wait()).
//   Target: the adapter makes no more sequential requests than the raw SDK.
// - the same two round trips with 50 ms held on every request (the emulator's
//   latencyMs), as a network round trip to the service would. Target: within
//   1.2x of the raw SDK.
// - the round trip again beside a CPU-bound process (a busy Node.js loop), as on
//   a machine that runs other work. Target, at rest and loaded: at most the raw
//   SDK's + 5 ms; and at most 1.1x at 50 ms per request.
//
// The two sides alternate so they share machine noise; medians are printed.
// The script only reports: it exits 0 even when a figure misses its target.
import { spawn } from 'node:child_process';
import { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { createVercelSandbox } from '../dist/index.js';
import { VercelEmulator } from '../dist/emulator/index.js';

const quick = process.argv.includes('--quick');
const MiB = 1024 * 1024;
const SIZE = (quick ? 8 : 64) * MiB;
const THROUGHPUT_RUNS = quick ? 2 : 5;
const ROUND_TRIPS = quick ? 5 : 30;
const LATENCY_RUNS = quick ? 3 : 10;
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

const SHORT = ['sh', '-c', 'echo out; echo err >&2'];

async function rawShortStream(raw) {
  const started = performance.now();
  const command = await raw.runCommand({ cmd: SHORT[0], args: SHORT.slice(1), detached: true });
  let bytes = 0;
  for await (const log of command.logs()) bytes += Buffer.byteLength(log.data);
  const done = await command.wait();
  if (done.exitCode !== 0 || bytes !== 8) throw new Error('raw short stream failed');
  return performance.now() - started;
}

async function adapterShortStream(sandbox) {
  const started = performance.now();
  const proc = sandbox.stream(SHORT);
  let bytes = 0;
  try {
    for await (const chunk of proc) bytes += chunk.data.byteLength;
    const result = await proc.wait();
    if (result.exitCode !== 0 || bytes !== 8) throw new Error('adapter short stream failed');
  } finally {
    await proc[Symbol.asyncDispose]();
  }
  return performance.now() - started;
}

/** Requests per route that `work` made, by the emulator's counts. */
async function requestsOf(emulator, work) {
  const before = emulator.requestCounts();
  await work();
  const after = emulator.requestCounts();
  const made = {};
  for (const [route, count] of Object.entries(after)) if (count - (before[route] ?? 0) > 0) made[route] = count - (before[route] ?? 0);
  return made;
}

function describeRequests(made) {
  const total = Object.values(made).reduce((a, b) => a + b, 0);
  return `${total} (${Object.entries(made).map(([route, n]) => `${n} ${route}`).join(', ')})`;
}

function requestTarget(raw, ours) {
  const total = (made) => Object.values(made).reduce((a, b) => a + b, 0);
  return `<= raw ${total(ours) <= total(raw) ? 'met' : 'MISSED'}`;
}

function latencyRow(name, raw, ours) {
  const ratio = median(ours) / median(raw);
  return [name, `${median(raw).toFixed(1)} ms`, `${median(ours).toFixed(1)} ms`, `${ratio.toFixed(2)}x`, `<= 1.10x ${ratio <= 1.1 ? 'met' : 'MISSED'}`];
}

async function adapterRoundTrip(sandbox) {
  const started = performance.now();
  const result = await sandbox.run(['true']);
  if (result.exitCode !== 0) throw new Error('adapter true failed');
  return performance.now() - started;
}

/** The round trip's target: at most the raw SDK's + 5 ms. */
function overTarget(rawTimes, ourTimes) {
  const over = median(ourTimes) - median(rawTimes);
  return `<= +5 ms ${over <= 5 ? 'met' : 'MISSED'} (+${over.toFixed(1)} ms)`;
}

const emulator = await VercelEmulator.start();
let sandbox;
try {
  const raw = await VercelSdkSandbox.create({ ...emulator.credentials, fetch: emulator.fetch });
  sandbox = await createVercelSandbox({ ...emulator.credentials, fetch: emulator.fetch, recordBase: emulator.recordBase });
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
  // The same round trip beside a CPU-bound process: a busy loop of its own, killed by its pid.
  const busy = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  const loadedRaw = [];
  const loadedOurs = [];
  try {
    for (let i = 0; i < ROUND_TRIPS; i++) {
      loadedRaw.push(await rawRoundTrip(raw));
      loadedOurs.push(await adapterRoundTrip(sandbox));
    }
  } finally {
    busy.kill('SIGKILL');
  }
  // Requests per command (the emulator counts every request by route).
  const counts = {
    rawRun: await requestsOf(emulator, () => rawRoundTrip(raw)),
    ourRun: await requestsOf(emulator, () => adapterRoundTrip(sandbox)),
    rawStream: await requestsOf(emulator, () => rawShortStream(raw)),
    ourStream: await requestsOf(emulator, () => adapterShortStream(sandbox)),
  };
  // Latency with 50 ms held on every request, alternating the sides.
  emulator.latencyMs = 50;
  const slow = { rawRun: [], ourRun: [], rawStream: [], ourStream: [] };
  for (let i = 0; i < LATENCY_RUNS; i++) {
    slow.rawRun.push(await rawRoundTrip(raw));
    slow.ourRun.push(await adapterRoundTrip(sandbox));
    slow.rawStream.push(await rawShortStream(raw));
    slow.ourStream.push(await adapterShortStream(sandbox));
  }
  emulator.latencyMs = 0;
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
      overTarget(rawRt, ourRt),
    ],
    [
      `round trip of true beside a busy loop (median of ${ROUND_TRIPS})`,
      `${median(loadedRaw).toFixed(1)} ms`,
      `${median(loadedOurs).toFixed(1)} ms`,
      `${(median(loadedOurs) / median(loadedRaw)).toFixed(2)}x`,
      overTarget(loadedRaw, loadedOurs),
    ],
    ['requests per run([\'true\'])', describeRequests(counts.rawRun), describeRequests(counts.ourRun), '', requestTarget(counts.rawRun, counts.ourRun)],
    ['requests per short stream()', describeRequests(counts.rawStream), describeRequests(counts.ourStream), '', requestTarget(counts.rawStream, counts.ourStream)],
    latencyRow(`run(['true']) at 50 ms/request (median of ${LATENCY_RUNS})`, slow.rawRun, slow.ourRun),
    latencyRow(`short stream() at 50 ms/request (median of ${LATENCY_RUNS})`, slow.rawStream, slow.ourStream),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column])).join('  '));
  console.log(
    '\nThe raw short stream is a detached runCommand (its id), logs() and wait(), one after another; the adapter\'s' +
      '\nrun() and stream() are one attached start of the supervisor each, whose answer carries the id, the output and the end.',
  );
  console.log(`load average at the end: ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);
} finally {
  await sandbox?.close();
  await emulator.close();
}
