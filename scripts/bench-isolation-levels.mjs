// The isolation levels side by side, in one run: a new sandbox's create, run(['true']) and
// close(), at each level the reference adapters offer, rotating the order so that every level
// shares the machine's noise:
//   plain local            createLocalSandbox()                             no boundary
//   namespaces             createLocalSandbox({ isolation: 'namespaces' })  Linux namespaces, shared kernel
//   Docker (runc)          createDockerSandbox({ image })                   a container, shared kernel
//   Docker (gVisor)        createDockerSandbox({ image, runtime: 'runsc' }) gVisor's kernel in user space
//   E2B on its emulator    createE2BSandbox over envd's wire protocol      the adapter's own cost only
// bubblewrap's one-shot sandbox runs beside them as the baseline of the namespaces row (issue 36:
// at most 2x). The Docker rows need dockerd (and runsc for gVisor), started here on a socket of
// this script's own; a level that cannot run here is printed with the reason, never dropped.
// A real remote VM (E2B's or Vercel's cloud) cannot be reached from here: its create is the
// vendor's boot and network round trips, which an emulator on loopback does not have.
// Usage: npm run build && node scripts/bench-isolation-levels.mjs [--rounds 15]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import { Sandbox as E2BNative } from 'e2b';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { createDockerSandbox } from '@sandstream/adapter-docker';
import { dockerdMissing, gvisorConfig, runscMissing, startDockerd } from '@sandstream/adapter-docker/engine';
import { createE2BSandbox } from '@sandstream/adapter-e2b';
import { startEnvdEmulator } from '@sandstream/adapter-e2b/emulator';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '15' } } });
const ROUNDS = Number(values.rounds);

const median = (samples) => [...samples].sort((a, b) => a - b)[samples.length >> 1];
const ms = (value) => `${value.toFixed(1)} ms`;

/** One create, run(['true']), close() through `create`, in ms. */
async function createRunClose(create) {
  const started = performance.now();
  const sb = await create();
  try {
    const result = await sb.run(['true']);
    if (result.exitCode !== 0) throw new Error(`run(['true']): exit ${result.exitCode}`);
  } finally {
    await sb.close();
  }
  return performance.now() - started;
}

/** bubblewrap's one-shot sandbox, as adapter-local's bench runs it; undefined where it cannot run. */
const BWRAP_ARGS = ['--ro-bind', '/', '/', '--unshare-all', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', 'true'];
function bwrapMissing() {
  const trial = spawnSync('bwrap', BWRAP_ARGS, { stdio: 'ignore' });
  return trial.status === 0 ? undefined : `bwrap did not run here (${trial.error?.message ?? `exit ${trial.status}`})`;
}
async function bwrapOnce() {
  const started = performance.now();
  const child = spawn('bwrap', BWRAP_ARGS, { stdio: 'ignore' });
  const code = await new Promise((resolve, reject) => child.once('error', reject).once('close', resolve));
  if (code !== 0) throw new Error(`bwrap: exit ${code}`);
  return performance.now() - started;
}

const levels = [];
const cleanups = [];
const level = (name, boundary, missing, once) => levels.push({ name, boundary, missing, once, samples: [] });

level('plain local', 'none (child processes of this one)', undefined, () => createRunClose(() => createLocalSandbox()));
level('namespaces', 'Linux namespaces, host system dirs read-only', undefined, () => createRunClose(() => createLocalSandbox({ isolation: 'namespaces' })));
level('bubblewrap one-shot', 'the namespaces row\'s baseline', bwrapMissing(), bwrapOnce);

const dockerMissing = dockerdMissing();
let docker;
let image;
if (dockerMissing === undefined) {
  const gvisor = runscMissing();
  const engine = await startDockerd(gvisor === undefined ? { config: gvisorConfig() } : {});
  cleanups.push(() => engine.stop());
  docker = new Docker({ socketPath: engine.socketPath });
  image = await engine.importBusybox('sandstream-busybox:levels', { tools: ['/usr/bin/env', '/usr/bin/nice', '/usr/bin/prlimit'] });
  level('Docker (runc)', 'a container, the host\'s kernel', undefined, () => createRunClose(() => createDockerSandbox({ docker, image })));
  level('Docker (gVisor)', 'a container under gVisor\'s kernel', gvisor, () => createRunClose(() => createDockerSandbox({ docker, image, runtime: 'runsc' })));
} else {
  level('Docker (runc)', 'a container, the host\'s kernel', dockerMissing, undefined);
  level('Docker (gVisor)', 'a container under gVisor\'s kernel', dockerMissing, undefined);
}

// An empty home, so the emulator's login shells run no hooks of this machine's profile.
const home = mkdtempSync(join(tmpdir(), 'sandstream-levels-'));
cleanups.push(() => rmSync(home, { recursive: true, force: true }));
const envd = await startEnvdEmulator({ env: { HOME: home } });
cleanups.push(() => envd.close());
level('E2B adapter, envd emulator', 'a VM in E2B\'s cloud (here: its emulator on loopback)', undefined, () =>
  createRunClose(async () => createE2BSandbox({ sandbox: await E2BNative.create({ debug: true, sandboxUrl: envd.url }) })),
);

const load = loadavg().map((value) => value.toFixed(2)).join(' ');
try {
  const running = levels.filter((entry) => entry.missing === undefined);
  for (const entry of running) await entry.once(); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < running.length; i++) {
      const entry = running[(round + i) % running.length];
      entry.samples.push(await entry.once());
    }
  }
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup();
}

const plain = median(levels[0].samples);
const bwrap = levels[2].samples.length > 0 ? median(levels[2].samples) : undefined;
console.log(`isolation levels: create, run(['true']), close(), median of ${ROUNDS} rounds, rotating; ${new Date().toISOString()}`);
console.log(`machine: ${process.platform} ${process.arch}, node ${process.version}, load ${load} (1/5/15 min) at start, ${loadavg().map((value) => value.toFixed(2)).join(' ')} at end`);
console.log('');
console.log(`${'level'.padEnd(28)}${'median'.padStart(12)}${'p10/p90'.padStart(20)}${'vs plain'.padStart(10)}  boundary`);
for (const entry of levels) {
  if (entry.missing !== undefined) {
    console.log(`${entry.name.padEnd(28)}${'not run'.padStart(12)}${''.padStart(20)}${''.padStart(10)}  ${entry.boundary}: ${entry.missing}`);
    continue;
  }
  const sorted = [...entry.samples].sort((a, b) => a - b);
  const spread = `${ms(sorted[Math.floor(sorted.length * 0.1)])}/${ms(sorted[Math.floor(sorted.length * 0.9)])}`;
  console.log(`${entry.name.padEnd(28)}${ms(median(entry.samples)).padStart(12)}${spread.padStart(20)}${`${(median(entry.samples) / plain).toFixed(1)}x`.padStart(10)}  ${entry.boundary}`);
}
if (bwrap !== undefined) {
  const namespaces = median(levels[1].samples);
  const paired = median(levels[1].samples.map((value, i) => value / levels[2].samples[i]));
  console.log('');
  console.log(`namespaces / bubblewrap: ${(namespaces / bwrap).toFixed(2)}x of the medians, ${paired.toFixed(2)}x median of paired ratios (target: at most 2x)`);
}
