// Side by side over one envd emulator: this adapter against the raw e2b SDK.
//   streaming throughput: stream() of `head -c N /dev/zero` vs commands.run(..., { onStdout })
//   round trip:           run(['true'])                        vs commands.run('true')
//   requests:             envd requests per run(['true']) and per stream() of a short command, as the
//                         emulator records them, vs the SDK's commands.run of the same
//   latency:              the same run(['true']) and short stream() with 50 ms held on every envd request
//                         (the emulator's latencyMs), as on a real network, alternating the sides
//   under load:           the round trip again beside a CPU-bound process (a busy Node.js loop), as
//                         on a machine that runs other work; the targets hold at rest and loaded
// Usage: npm run bench -w @sandstream/adapter-e2b [-- --mib 64 --runs 3 --trips 30]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sandbox } from 'e2b';
import { createE2BSandbox } from '../dist/index.js';
import { startEnvdEmulator } from '../dist/emulator/index.js';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? Number(args[index + 1]) : fallback;
};
const MIB = option('mib', 64);
const RUNS = option('runs', 3);
const TRIPS = option('trips', 30);
const LATENCY_RUNS = option('latency-runs', 10);
const LATENCY_MS = 50;
const BYTES = MIB * 1024 * 1024;

/** A row of the latency figures: medians and their ratio. */
const latencyRow = (label, ours, raw) => [label, median(ours).toFixed(1), median(raw).toFixed(1), `${(median(ours) / median(raw)).toFixed(2)}x`];

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

// An empty home, so the SDK's `bash -l` runs no login hooks of this machine's profile.
const home = mkdtempSync(join(tmpdir(), 'sandstream-e2b-bench-'));
const envd = await startEnvdEmulator({ env: { HOME: home } });
try {
  const native = await Sandbox.create({ debug: true, sandboxUrl: envd.url });
  const sb = await createE2BSandbox({ sandbox: native });

  async function ours() {
    const started = performance.now();
    let bytes = 0;
    for await (const chunk of sb.stream(['head', '-c', String(BYTES), '/dev/zero'])) bytes += chunk.data.byteLength;
    const seconds = (performance.now() - started) / 1000;
    if (bytes !== BYTES) throw new Error(`adapter delivered ${bytes} of ${BYTES} bytes`);
    return MIB / seconds;
  }
  async function raw() {
    const started = performance.now();
    let chars = 0;
    await native.commands.run(`head -c ${BYTES} /dev/zero`, { onStdout: (data) => void (chars += data.length), timeoutMs: 0 });
    const seconds = (performance.now() - started) / 1000;
    if (chars !== BYTES) throw new Error(`SDK delivered ${chars} of ${BYTES} characters`);
    return MIB / seconds;
  }

  // Warm-up, then alternate so that load on the machine hits both alike.
  await ours();
  await raw();
  const oursRates = [];
  const rawRates = [];
  for (let i = 0; i < RUNS; i++) {
    oursRates.push(await ours());
    rawRates.push(await raw());
  }

  /** `TRIPS` round trips of `true` on each side, alternating. */
  const roundTrips = async () => {
    const ours = [];
    const raw = [];
    for (let i = 0; i < TRIPS; i++) {
      let started = performance.now();
      await sb.run(['true']);
      ours.push(performance.now() - started);
      started = performance.now();
      await native.commands.run('true');
      raw.push(performance.now() - started);
    }
    return { ours, raw };
  };
  const { ours: oursTrips, raw: rawTrips } = await roundTrips();

  // The same round trip beside a CPU-bound process: a busy loop of its own, killed by its pid.
  const busy = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  let loaded;
  try {
    loaded = await roundTrips();
  } finally {
    busy.kill('SIGKILL');
  }
  const { ours: loadedOurs, raw: loadedRaw } = loaded;

  // Requests per command, counted where they arrive: the emulator's request log.
  const requestsOf = async (work) => {
    const before = envd.requests.length;
    await work();
    return envd.requests.slice(before).map((request) => request.method.replace('process.Process/', ''));
  };
  const SHORT = 'echo a; echo b >&2; echo c';
  const oursTrue = await requestsOf(() => sb.run(['true']));
  const rawTrue = await requestsOf(() => native.commands.run('true'));
  const oursShort = await requestsOf(async () => {
    for await (const chunk of sb.stream(['sh', '-c', SHORT])) void chunk;
  });
  const rawShort = await requestsOf(() => native.commands.run(SHORT, { onStdout: () => undefined, onStderr: () => undefined }));
  const oursShortRun = async () => {
    for await (const chunk of sb.stream(['sh', '-c', SHORT])) void chunk;
  };
  const rawShortRun = () => native.commands.run(SHORT, { onStdout: () => undefined, onStderr: () => undefined });
  const timed = async (work) => {
    const started = performance.now();
    await work();
    return performance.now() - started;
  };
  envd.latencyMs = LATENCY_MS;
  const slow = { oursRun: [], rawRun: [], oursStream: [], rawStream: [] };
  for (let i = 0; i < LATENCY_RUNS; i++) {
    slow.oursRun.push(await timed(() => sb.run(['true'])));
    slow.rawRun.push(await timed(() => native.commands.run('true')));
    slow.oursStream.push(await timed(oursShortRun));
    slow.rawStream.push(await timed(rawShortRun));
  }
  envd.latencyMs = 0;
  const closing = await requestsOf(() => sb.close());

  const oursRate = median(oursRates);
  const rawRate = median(rawRates);
  const rows = [
    ['', 'adapter-e2b', 'raw e2b SDK', 'ratio'],
    [`streaming ${MIB} MiB (MiB/s, median of ${RUNS})`, oursRate.toFixed(1), rawRate.toFixed(1), `${(oursRate / rawRate).toFixed(2)}x`],
    [
      `round trip of true (ms, median of ${TRIPS})`,
      median(oursTrips).toFixed(1),
      median(rawTrips).toFixed(1),
      `${(median(oursTrips) / median(rawTrips)).toFixed(2)}x`,
    ],
    [
      `round trip of true beside a busy loop (ms, median of ${TRIPS})`,
      median(loadedOurs).toFixed(1),
      median(loadedRaw).toFixed(1),
      `${(median(loadedOurs) / median(loadedRaw)).toFixed(2)}x`,
    ],
    ['envd requests per run([\'true\'])', String(oursTrue.length), String(rawTrue.length), `${(oursTrue.length / rawTrue.length).toFixed(2)}x`],
    ['envd requests per short stream()', String(oursShort.length), String(rawShort.length), `${(oursShort.length / rawShort.length).toFixed(2)}x`],
    latencyRow(`run(['true']) at ${LATENCY_MS} ms/request (ms, median of ${LATENCY_RUNS})`, slow.oursRun, slow.rawRun),
    latencyRow(`short stream() at ${LATENCY_MS} ms/request (ms, median of ${LATENCY_RUNS})`, slow.oursStream, slow.rawStream),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column])).join('  '));
  console.log(
    `throughput target (>= 0.9x of the SDK's onStdout path): ${oursRate / rawRate >= 0.9 ? 'met' : 'MISSED'}; ` +
      'the adapter moves bytes (binary protobuf, the supervisor passing output through), the SDK decodes strings (JSON).',
  );
  console.log(
    `requests: adapter run ${oursTrue.join(', ')}; stream ${oursShort.join(', ')}; close() of the handle ${closing.join(', ') || 'none'} (one sweep by tag per handle, not per command). ` +
      `SDK run ${rawTrue.join(', ')}; stream ${rawShort.join(', ')}.`,
  );
  const latencyMet = [slow.oursRun, slow.oursStream].every((ours, i) => median(ours) / median([slow.rawRun, slow.rawStream][i]) <= 1.1);
  const requestsMet = oursTrue.length <= rawTrue.length && oursShort.length <= rawShort.length;
  console.log(
    `latency target (<= 1.1x of the SDK at ${LATENCY_MS} ms per request): ${latencyMet ? 'met' : 'MISSED'}; ` +
      `requests target (no more sequential requests than the SDK): ${requestsMet ? 'met' : 'MISSED'}.`,
  );
  const overMs = median(oursTrips) - median(rawTrips);
  const loadedOverMs = median(loadedOurs) - median(loadedRaw);
  console.log(
    `round trip target (at most the SDK's + 5 ms, at rest and beside a busy loop): ${overMs <= 5 ? 'met' : 'MISSED'} at rest (+${overMs.toFixed(1)} ms), ` +
      `${loadedOverMs <= 5 ? 'met' : 'MISSED'} loaded (+${loadedOverMs.toFixed(1)} ms); ` +
      `1.1x at ${LATENCY_MS} ms per request: ${median(slow.oursRun) / median(slow.rawRun) <= 1.1 ? 'met' : 'MISSED'}.`,
  );
  console.log('round trip: the adapter starts one envd process per command, the supervisor of @sandstream/remote (ADR-0033).');
} finally {
  await envd.close();
  rmSync(home, { recursive: true, force: true });
}
