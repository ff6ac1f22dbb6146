// Side by side over one envd emulator: this adapter against the raw e2b SDK.
//   streaming throughput: stream() of `head -c N /dev/zero` vs commands.run(..., { onStdout })
//   round trip:           run(['true'])                        vs commands.run('true')
// Usage: npm run bench -w @sandstream/adapter-e2b [-- --mib 64 --runs 3 --trips 30]
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
const BYTES = MIB * 1024 * 1024;

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

  const oursTrips = [];
  const rawTrips = [];
  for (let i = 0; i < TRIPS; i++) {
    let started = performance.now();
    await sb.run(['true']);
    oursTrips.push(performance.now() - started);
    started = performance.now();
    await native.commands.run('true');
    rawTrips.push(performance.now() - started);
  }
  await sb.close();

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
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column])).join('  '));
  console.log(
    `throughput target (>= 0.9x of the SDK's onStdout path): ${oursRate / rawRate >= 0.9 ? 'met' : 'MISSED'}; ` +
      'the adapter moves bytes (binary protobuf through a relay), the SDK decodes strings (JSON).',
  );
  console.log('round trip: the adapter starts the command and its output relay as two envd processes (see ADR-0026).');
} finally {
  await envd.close();
  rmSync(home, { recursive: true, force: true });
}
