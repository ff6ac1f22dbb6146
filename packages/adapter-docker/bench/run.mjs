// Side by side on one real dockerd of the bench's own (this package's ./engine): this adapter against
// dockerode doing plain exec (create, start, demultiplex, inspect), the same work with none of
// the adapter's guarantees.
//   round trip:           run(['true'])                           vs exec of `true`
//   streaming throughput: stream() of `head -c N /dev/zero`       vs exec of the same, demuxStream'ed
// Usage: npm run bench -w @sandstream/adapter-docker [-- --mib 64 --runs 3 --trips 30]
import { loadavg } from 'node:os';
import { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import { dockerdMissing, startDockerd } from '../dist/engine/index.js';
import { createDockerSandbox } from '../dist/index.js';

const { values } = parseArgs({ options: { mib: { type: 'string', default: '64' }, runs: { type: 'string', default: '3' }, trips: { type: 'string', default: '30' } } });
const [MIB, RUNS, TRIPS] = [values.mib, values.runs, values.trips].map(Number);
const BYTES = MIB * 1024 * 1024;

/** The middle value (the upper one of an even count). */
function median(samples) {
  return samples.toSorted((a, b) => a - b)[samples.length >> 1];
}

const missing = dockerdMissing();
if (missing !== undefined) {
  console.error(`no bench: ${missing}`);
  process.exit(1);
}
const engine = await startDockerd();
try {
  const image = await engine.importBusybox('sandstream-busybox:bench', { tools: ['/usr/bin/env', '/usr/bin/nice', '/usr/bin/prlimit'] });
  const docker = new Docker({ socketPath: engine.socketPath });
  // Requests per command, counted on the adapter's client.
  let requests = 0;
  const modem = docker.modem;
  const dial = modem.dial.bind(modem);
  modem.dial = (options, callback) => {
    requests += 1;
    dial(options, callback);
  };
  const sb = await createDockerSandbox({ docker, image });
  const container = sb.native;
  const plain = new Docker({ socketPath: engine.socketPath }).getContainer(container.id);

  /** dockerode's plain exec: create, start, read both streams to their end, inspect. */
  async function rawExec(cmd, onStdout) {
    const exec = await plain.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({ hijack: true, stdin: false });
    const stdout = new Writable({ write: (chunk, _encoding, done) => (onStdout(chunk), done()) });
    const stderr = new Writable({ write: (_chunk, _encoding, done) => done() });
    plain.modem.demuxStream(stream, stdout, stderr);
    await new Promise((resolve, reject) => stream.on('end', resolve).on('error', reject));
    return (await exec.inspect()).ExitCode;
  }

  /** MiB/s of one transfer of BYTES; `transfer` resolves with the bytes it received. */
  async function rate(what, transfer) {
    const started = performance.now();
    const received = await transfer();
    if (received !== BYTES) throw new Error(`${what} delivered ${received} of ${BYTES} bytes`);
    return MIB / ((performance.now() - started) / 1000);
  }
  /** The ms `work` takes. */
  async function timed(work) {
    const started = performance.now();
    await work();
    return performance.now() - started;
  }
  const HEAD = ['head', '-c', String(BYTES), '/dev/zero'];
  const ours = () =>
    rate('the adapter', async () => {
      let received = 0;
      for await (const chunk of sb.stream(HEAD)) received += chunk.data.byteLength;
      return received;
    });
  const raw = () =>
    rate('plain exec', async () => {
      let received = 0;
      await rawExec(HEAD, (chunk) => void (received += chunk.length));
      return received;
    });

  const loadBefore = loadavg()[0];
  // A warm-up of each, then the two alternate, so that the machine's load hits both alike.
  await ours();
  await raw();
  const rates = { ours: [], raw: [] };
  for (let i = 0; i < RUNS; i++) {
    rates.ours.push(await ours());
    rates.raw.push(await raw());
  }
  const trips = { ours: [], raw: [] };
  const before = requests;
  for (let i = 0; i < TRIPS; i++) {
    trips.ours.push(await timed(() => sb.run(['true'])));
    trips.raw.push(await timed(() => rawExec(['true'], () => undefined)));
  }
  const perRun = (requests - before) / TRIPS;
  await sb.close();

  const oursRate = median(rates.ours);
  const rawRate = median(rates.raw);
  const [oursTrip, rawTrip] = [median(trips.ours), median(trips.raw)];
  const rows = [
    ['', 'adapter-docker', 'plain exec (dockerode)', 'ratio'],
    [`streaming ${MIB} MiB (MiB/s, median of ${RUNS})`, oursRate.toFixed(1), rawRate.toFixed(1), `${(oursRate / rawRate).toFixed(2)}x`],
    [`round trip of true (ms, median of ${TRIPS})`, oursTrip.toFixed(1), rawTrip.toFixed(1), `${(oursTrip / rawTrip).toFixed(2)}x`],
    ['Engine requests per run([\'true\'])', perRun.toFixed(1), '3.0', `${(perRun / 3).toFixed(2)}x`],
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column])).join('  '));
  console.log(`throughput target (>= 0.9x of plain exec): ${oursRate / rawRate >= 0.9 ? 'met' : 'MISSED'}`);
  console.log(`round trip target (<= 1.2x of plain exec): ${oursTrip / rawTrip <= 1.2 ? 'met' : 'MISSED'} (the supervisor, a shell, starts before the command and reports its end: ADR-0033)`);
  console.log(`load average: ${loadBefore.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after (2 cores, shared)`);
} finally {
  await engine.stop();
}
