// Side by side on one real sshd of the bench's own (this package's ./server), as root: this adapter
// against ssh2's plain exec on one already-connected Client, the same work with none of the adapter's
// guarantees (no supervisor, no owner lease, no whole-tree teardown, no exact argv).
//   round trip:           run(['true'])                             vs client.exec('true'), read to its 'close'
//   streaming throughput: stream() of `head -c N /dev/zero`         vs client.exec of the same, counting 'data'
//   under load:           both again beside one CPU-bound process per core (`node -e 'for(;;){}'`)
// The two sides alternate round by round, after a warm-up of each, so that the machine's load hits both
// alike; the figures are medians, the ratios are what the bench is for (never asserted as timings).
// Each timed call starts after a pause of BENCH_SETTLE_MS (default 50), untimed, on both sides alike: ssh2
// leaves Nagle's algorithm on (no TCP_NODELAY) and sshd delays its ACKs (Linux: at least 40 ms), so a channel
// opened within ~40 ms of the previous one's close on the same connection can wait for that ACK. Without the
// pause, alternation hands that wait to one side only (the adapter's connection is idle only for the short
// ssh2 round trip in between, ssh2's for the adapter's longer one).
// Usage: npm run bench -w @sandstream/adapter-ssh
//   env BENCH_ROUNDS (round trips per side and phase, default 40), BENCH_STREAM_ROUNDS (transfers per
//   side and phase, default 5), BENCH_MIB (size of a transfer, default 64), BENCH_SETTLE_MS (the pause
//   above; 0 for none), BENCH_JSON (write the results there).
// Each phase also prints how many processes the machine runs: the supervisor looks through /proc.
import { spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { Client } from 'ssh2';
import { createSshSandbox } from '../dist/index.js';
import { sshdMissing, startSshd } from '../dist/server/index.js';

/** A whole number from the environment, at least 1. */
function setting(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`${name} must be a whole number of at least 1 (it is ${JSON.stringify(raw)})`);
    process.exit(2);
  }
  return value;
}
const ROUNDS = setting('BENCH_ROUNDS', 40);
const STREAM_ROUNDS = setting('BENCH_STREAM_ROUNDS', 5);
const MIB = setting('BENCH_MIB', 64);
const SETTLE_MS = process.env.BENCH_SETTLE_MS === '0' ? 0 : setting('BENCH_SETTLE_MS', 50);
const BYTES = MIB * 1024 * 1024;
const CORES = availableParallelism();
const HEAD = ['head', '-c', String(BYTES), '/dev/zero'];

/** The middle value (the upper one of an even count), as the other adapters' benches take it. */
const median = (samples) => samples.toSorted((a, b) => a - b)[samples.length >> 1];
/** The 90th percentile, nearest rank. */
const p90 = (samples) => samples.toSorted((a, b) => a - b)[Math.max(Math.ceil(samples.length * 0.9) - 1, 0)];
/** The load averages (1, 5, 15 min), as printed. */
const load = () => loadavg().map((value) => Number(value.toFixed(2)));
const loadText = (figures) => figures.map((value) => value.toFixed(2)).join(' ');
/** How many processes the machine runs now. */
const processes = () => readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name)).length;

const missing = sshdMissing();
if (missing !== undefined) {
  console.error(`no bench: ${missing}`);
  process.exit(1);
}

// The spinners of the loaded phases, killed by their pids however the bench ends.
const spinners = [];
function killSpinners() {
  for (const child of spinners.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
process.once('exit', killSpinners);
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    killSpinners();
    // The finally below stops the server only if the script gets there; a second signal ends it at once.
    process.exitCode = 130;
    interrupted = true;
  });
}
const checkInterrupted = () => {
  if (interrupted) throw new Error('interrupted');
};

const loads = { start: load() };
const results = {};
let server;
let sb;
let client;
try {
  server = await startSshd();
  const root = server.accounts.root;
  sb = await createSshSandbox({
    host: server.host,
    port: server.port,
    username: root.username,
    privateKeyPath: server.clientKeyPath,
    knownHostsPath: server.knownHostsPath,
  });

  // The baseline: one ssh2 Client, connected once, with the same key and the host key checked.
  const hostKey = Buffer.from(server.hostPublicKey.split(' ')[1], 'base64');
  client = new Client();
  await new Promise((resolve, reject) => {
    client.once('ready', resolve).once('error', reject);
    client.connect({ host: server.host, port: server.port, username: root.username, privateKey: server.clientKey, hostVerifier: (key) => key.equals(hostKey) });
  });
  client.on('error', (error) => console.error(`ssh2 client: ${error.message}`));

  /** ssh2's plain exec: open the channel, read both streams, resolve with the exit code at the channel's 'close'. */
  const rawExec = (command, onStdout) =>
    new Promise((resolve, reject) => {
      client.exec(command, (error, channel) => {
        if (error) return reject(error);
        let code;
        channel.on('data', onStdout);
        channel.stderr.on('data', () => undefined);
        channel.once('exit', (exitCode, signal) => (code = exitCode ?? `signal ${signal}`));
        channel.once('close', () => resolve(code));
      });
    });

  /** The pause before each timed call (see the top of the file). */
  const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  /** The ms `work` takes, after the pause. */
  async function timed(work) {
    await settle();
    const started = performance.now();
    await work();
    return performance.now() - started;
  }
  const oursTrue = async () => {
    const result = await sb.run(['true']);
    if (result.exitCode !== 0) throw new Error(`the adapter's run(['true']) exited ${result.exitCode ?? result.signal}`);
  };
  const rawTrue = async () => {
    const code = await rawExec('true', () => undefined);
    if (code !== 0) throw new Error(`ssh2's exec of true exited ${code}`);
  };
  /** MiB/s of one transfer of BYTES; `transfer` resolves with the bytes it received. */
  async function rate(what, transfer) {
    await settle();
    const started = performance.now();
    const received = await transfer();
    if (received !== BYTES) throw new Error(`${what} delivered ${received} of ${BYTES} bytes`);
    return MIB / ((performance.now() - started) / 1000);
  }
  const oursStream = () =>
    rate('the adapter', async () => {
      let received = 0;
      const proc = sb.stream(HEAD);
      for await (const chunk of proc) if (chunk.stream === 'stdout') received += chunk.data.byteLength;
      const result = await proc.wait();
      if (result.exitCode !== 0) throw new Error(`the adapter's stream of head exited ${result.exitCode ?? result.signal}`);
      return received;
    });
  const rawStream = () =>
    rate('ssh2 exec', async () => {
      let received = 0;
      const code = await rawExec(HEAD.join(' '), (chunk) => void (received += chunk.length));
      if (code !== 0) throw new Error(`ssh2's exec of head exited ${code}`);
      return received;
    });

  /** One phase: warm-ups, then round trips and transfers, the two sides alternating; prints as it goes. */
  async function phase(name) {
    const before = load();
    const running = processes();
    console.log(`\n== ${name}: load average ${loadText(before)} (1/5/15 min, ${CORES} cores), ${running} processes`);
    for (let i = 0; i < 3; i++) {
      await oursTrue();
      await rawTrue();
    }
    const trips = { adapter: [], ssh2: [] };
    for (let i = 0; i < ROUNDS; i++) {
      checkInterrupted();
      trips.adapter.push(await timed(oursTrue));
      trips.ssh2.push(await timed(rawTrue));
    }
    const afterTrips = load();
    const latency = {
      adapter: { median: median(trips.adapter), p90: p90(trips.adapter), samples: trips.adapter },
      ssh2: { median: median(trips.ssh2), p90: p90(trips.ssh2), samples: trips.ssh2 },
    };
    latency.ratio = latency.adapter.median / latency.ssh2.median;
    latency.diffMs = latency.adapter.median - latency.ssh2.median;
    console.log(`run(['true']), ${ROUNDS} rounds each, alternating (load average after: ${loadText(afterTrips)})`);
    console.log(`  adapter-ssh  median ${latency.adapter.median.toFixed(2)} ms  p90 ${latency.adapter.p90.toFixed(2)} ms`);
    console.log(`  ssh2 exec    median ${latency.ssh2.median.toFixed(2)} ms  p90 ${latency.ssh2.p90.toFixed(2)} ms`);
    console.log(`  ratio of medians ${latency.ratio.toFixed(2)}x (${latency.diffMs >= 0 ? '+' : ''}${latency.diffMs.toFixed(2)} ms)`);

    await oursStream();
    await rawStream();
    const rates = { adapter: [], ssh2: [] };
    for (let i = 0; i < STREAM_ROUNDS; i++) {
      checkInterrupted();
      rates.adapter.push(await oursStream());
      rates.ssh2.push(await rawStream());
    }
    const after = load();
    const streaming = {
      adapter: { median: median(rates.adapter), samples: rates.adapter },
      ssh2: { median: median(rates.ssh2), samples: rates.ssh2 },
    };
    streaming.ratio = streaming.adapter.median / streaming.ssh2.median;
    console.log(`streaming ${MIB} MiB of stdout, ${STREAM_ROUNDS} rounds each, alternating (load average after: ${loadText(after)})`);
    console.log(`  adapter-ssh  median ${streaming.adapter.median.toFixed(1)} MiB/s  (runs: ${rates.adapter.map((r) => r.toFixed(1)).join(', ')})`);
    console.log(`  ssh2 exec    median ${streaming.ssh2.median.toFixed(1)} MiB/s  (runs: ${rates.ssh2.map((r) => r.toFixed(1)).join(', ')})`);
    console.log(`  ratio (adapter/ssh2) ${streaming.ratio.toFixed(2)}x`);
    return { load: { before, afterRoundTrips: afterTrips, after }, processes: running, latency, streaming };
  }

  results.rest = await phase('at rest');

  for (let i = 0; i < CORES; i++) {
    const child = spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' });
    child.once('error', (error) => console.error(`spinner: ${error.message}`));
    spinners.push(child);
  }
  // Let the spinners start and take their cores before measuring.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  results.loaded = await phase(`under load (${CORES} spinning node processes, pids ${spinners.map((c) => c.pid).join(', ')})`);
  killSpinners();
  loads.end = load();

  const { rest, loaded } = results;
  const ms = (value) => value.toFixed(2);
  const signed = (value) => `${value >= 0 ? '+' : ''}${value.toFixed(2)} ms`;
  const rows = [
    ['measure', 'adapter-ssh', 'ssh2 exec', 'ratio'],
    [`run(['true']) at rest, median of ${ROUNDS} (ms)`, ms(rest.latency.adapter.median), ms(rest.latency.ssh2.median), `${rest.latency.ratio.toFixed(2)}x (${signed(rest.latency.diffMs)})`],
    [`run(['true']) at rest, p90 (ms)`, ms(rest.latency.adapter.p90), ms(rest.latency.ssh2.p90), `${(rest.latency.adapter.p90 / rest.latency.ssh2.p90).toFixed(2)}x`],
    [`run(['true']) under load, median of ${ROUNDS} (ms)`, ms(loaded.latency.adapter.median), ms(loaded.latency.ssh2.median), `${loaded.latency.ratio.toFixed(2)}x (${signed(loaded.latency.diffMs)})`],
    [`run(['true']) under load, p90 (ms)`, ms(loaded.latency.adapter.p90), ms(loaded.latency.ssh2.p90), `${(loaded.latency.adapter.p90 / loaded.latency.ssh2.p90).toFixed(2)}x`],
    [`streaming ${MIB} MiB at rest, median of ${STREAM_ROUNDS} (MiB/s)`, rest.streaming.adapter.median.toFixed(1), rest.streaming.ssh2.median.toFixed(1), `${rest.streaming.ratio.toFixed(2)}x`],
    [`streaming ${MIB} MiB under load, median of ${STREAM_ROUNDS} (MiB/s)`, loaded.streaming.adapter.median.toFixed(1), loaded.streaming.ssh2.median.toFixed(1), `${loaded.streaming.ratio.toFixed(2)}x`],
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (cells) => `| ${cells.map((cell, column) => cell.padEnd(widths[column])).join(' | ')} |`;
  console.log('\n## Summary\n');
  console.log(line(rows[0]));
  console.log(line(widths.map((width) => '-'.repeat(width))));
  for (const row of rows.slice(1)) console.log(line(row));
  console.log(
    `\nload average (1/5/15 min, ${CORES} cores): ${loadText(loads.start)} at the start, ${loadText(rest.load.after)} after the phase at rest, ` +
      `${loadText(loaded.load.after)} at the end of the phase under load, ${loadText(loads.end)} at the end`,
  );
  console.log(`each timed call after ${SETTLE_MS} ms of quiet on both sides (BENCH_SETTLE_MS; see the top of bench/run.mjs).`);
  console.log('ratios: round trip adapter/ssh2 (lower is better); streaming adapter/ssh2 (higher is better).');
  console.log(
    'round trip: the adapter runs the command under the remote kit\'s supervisor (a shell that reports the start and the end of the ' +
      'whole tree, with an owner lease); ssh2 asks sshd for `true` and reads the exit status.',
  );

  if (process.env.BENCH_JSON) {
    const report = {
      date: new Date().toISOString(),
      node: process.version,
      cores: CORES,
      settings: { rounds: ROUNDS, streamRounds: STREAM_ROUNDS, mib: MIB, settleMs: SETTLE_MS },
      load: { start: loads.start, end: loads.end },
      rest,
      loaded,
    };
    writeFileSync(process.env.BENCH_JSON, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`results written to ${process.env.BENCH_JSON}`);
  }
} finally {
  killSpinners();
  if (sb !== undefined) await sb.close().catch((error) => console.error(`closing the sandbox: ${error.message}`));
  client?.end();
  if (server !== undefined) await server.stop().catch((error) => console.error(`stopping the sshd: ${error.message}`));
}
