// Benchmark of @sandstream/adapter-local against raw child_process.spawn.
//
//   npm run bench -w @sandstream/adapter-local            full run
//   npm run bench -w @sandstream/adapter-local -- --quick  smoke run (small sizes, few repetitions)
//
// Options: --quick, --only=throughput,roundtrip,capture,teardown,rss,isolation
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
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { BWRAP_ARGS, bubblewrap, bwrapOnce } from './bubblewrap.mjs';
import { allProcs, HAS_PROCFS, isLiveMember } from './procfs.mjs';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const BLOCK = 64 * KiB;
const SELF = fileURLToPath(import.meta.url);
/** True in the fresh Node processes that measure RSS. */
const IS_HELPER = process.argv.some((arg) => arg.startsWith('--rss-child='));

// ---- process bookkeeping and cleanup -------------------------------------

/** Process groups this process started (each command leads its own). */
const groups = new Set();
/** Helper Node processes (RSS measurements run in fresh processes). */
const helpers = new Set();
let cleaned = false;

function killEverything() {
  if (cleaned) return;
  cleaned = true;
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  groups.clear();
  // Any other direct child: commands started by run(), whose pid is not
  // exposed (each leads its own group), and raw baseline children.
  const helperPids = new Set([...helpers].map((helper) => helper.pid));
  for (const stat of allProcs()) {
    if (stat.ppid !== process.pid || helperPids.has(stat.pid)) continue;
    try {
      process.kill(stat.pgrp === stat.pid ? -stat.pid : stat.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // Helpers clean up after themselves on SIGTERM.
  for (const helper of helpers) helper.kill('SIGTERM');
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    killEverything();
    if (!IS_HELPER) process.stderr.write(`\nbench: interrupted by ${signal}; every process it started was killed\n`);
    process.exit(128 + os.constants.signals[signal]);
  });
}
process.on('exit', killEverything);
process.on('uncaughtException', (error) => {
  killEverything();
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  process.exit(1);
});
process.on('unhandledRejection', (error) => {
  killEverything();
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  process.exit(1);
});

/** Every group started, for the final check that nothing was left running. */
const everyGroup = new Set();

function track(pgid) {
  if (pgid !== undefined) {
    groups.add(pgid);
    everyGroup.add(pgid);
  }
  return pgid;
}

/** Live (non-orphan-zombie) processes left in the groups of this run. */
function leftovers() {
  return allProcs().filter((stat) => everyGroup.has(stat.pgrp) && isLiveMember(stat, stat.pgrp, process.pid));
}

// ---- helpers ---------------------------------------------------------------

let createLocalSandbox;
async function loadAdapter() {
  try {
    ({ createLocalSandbox } = await import('@sandstream/adapter-local'));
  } catch (error) {
    process.stderr.write(
      `bench: cannot load @sandstream/adapter-local (${error.message}).\n` +
        'Build it first: npm run build -w @sandstream/types -w @sandstream/adapter-local\n',
    );
    process.exit(1);
  }
}

const gc = globalThis.gc ?? (() => undefined);
const now = () => performance.now();
const hrnow = () => process.hrtime.bigint();

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))];
}

function ddArgs(bytes) {
  return ['dd', 'if=/dev/zero', `bs=${BLOCK}`, `count=${Math.ceil(bytes / BLOCK)}`, 'status=none'];
}

function fmtBytes(bytes) {
  if (bytes >= GiB) return `${+(bytes / GiB).toFixed(2)} GiB`;
  if (bytes >= MiB) return `${+(bytes / MiB).toFixed(1)} MiB`;
  return `${+(bytes / KiB).toFixed(1)} KiB`;
}
const fmtMs = (ms) => (ms >= 100 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`);
const fmtRate = (bytesPerMs) => `${((bytesPerMs * 1000) / GiB).toFixed(2)} GiB/s`;
const fmtMiB = (bytes) => `${(bytes / MiB).toFixed(1)} MiB`;

// Spawns a raw child the way a careful caller would: 'data' listeners on
// both pipes, stdin ignored; `detached` puts it in its own group when the
// measurement needs one.
function rawSpawn(argv, { detached = false, onData } = {}) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached });
  if (detached) track(child.pid);
  const closed = once(child, 'close');
  child.stdout.on('data', onData ?? (() => undefined));
  child.stderr.on('data', () => undefined);
  return { child, closed };
}

// ---- the group probe (a worker thread) -------------------------------------

class GroupProbe {
  constructor() {
    this.worker = new Worker(new URL('./group-probe.mjs', import.meta.url));
    this.pending = [];
    this.worker.on('message', (message) => this.pending.shift()?.(message));
    this.worker.on('error', (error) => {
      throw error;
    });
  }

  /** Starts watching `pgid`; resolves once polling has begun, with a promise of the moment it is gone. */
  async arm(pgid, timeoutMs) {
    const armed = new Promise((resolve) => this.pending.push(resolve));
    const gone = new Promise((resolve) => this.pending.push(resolve));
    this.worker.postMessage({ pgid, ownerPid: process.pid, timeoutMs });
    await armed;
    return { gone };
  }

  close() {
    return this.worker.terminate();
  }
}

// ---- 1. stream() throughput -------------------------------------------------

async function throughputSandstream(sb, bytes) {
  const cpu0 = process.cpuUsage();
  const t0 = now();
  const proc = sb.stream(ddArgs(bytes));
  let total = 0;
  let chunks = 0;
  let pgid;
  for await (const chunk of proc) {
    pgid ??= track(proc.pid);
    total += chunk.data.byteLength;
    chunks++;
  }
  const ms = now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const result = await proc.wait();
  await proc[Symbol.asyncDispose]();
  groups.delete(pgid);
  if (total !== bytes || result.exitCode !== 0) throw new Error(`sandstream stream: ${total} bytes, exit ${result.exitCode}`);
  return { ms, chunks, cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function throughputRaw(bytes, detached = false) {
  const cpu0 = process.cpuUsage();
  const t0 = now();
  let total = 0;
  let chunks = 0;
  const { child, closed } = rawSpawn(ddArgs(bytes), {
    detached,
    onData: (data) => {
      total += data.byteLength;
      chunks++;
    },
  });
  const [code] = await closed;
  const ms = now() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (total !== bytes || code !== 0) throw new Error(`raw stream: ${total} bytes, exit ${code}`);
  if (detached) groups.delete(child.pid);
  return { ms, chunks, cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function benchThroughput(sb, cfg) {
  const bytes = cfg.streamBytes;
  await throughputSandstream(sb, Math.min(bytes, 64 * MiB)); // warm-up
  await throughputRaw(Math.min(bytes, 64 * MiB));
  const s = [];
  const r = [];
  const d = [];
  for (let i = 0; i < cfg.streamReps; i++) {
    if (i % 2 === 0) {
      s.push(await throughputSandstream(sb, bytes));
      r.push(await throughputRaw(bytes));
      d.push(await throughputRaw(bytes, true));
    } else {
      d.push(await throughputRaw(bytes, true));
      r.push(await throughputRaw(bytes));
      s.push(await throughputSandstream(sb, bytes));
    }
  }
  const sRate = median(s.map((x) => bytes / x.ms));
  const rRate = median(r.map((x) => bytes / x.ms));
  const dRate = median(d.map((x) => bytes / x.ms));
  const ratio = sRate / rRate;
  return {
    row: {
      name: `stream() throughput, ${fmtBytes(bytes)} in ${BLOCK / KiB} KiB blocks`,
      sandstream: fmtRate(sRate),
      raw: fmtRate(rRate),
      ratio: `${ratio.toFixed(3)}x`,
      target: '>= 0.95x',
      pass: ratio >= 0.95,
    },
    details: [
      `throughput: ${cfg.streamReps} reps each, alternating; sandstream ${s.map((x) => fmtRate(bytes / x.ms)).join(' ')}`,
      `            raw ${r.map((x) => fmtRate(bytes / x.ms)).join(' ')}`,
      `            median of paired ratios ${median(s.map((x, i) => r[i].ms / x.ms)).toFixed(3)}x; ` +
        `mean chunk: sandstream ${fmtBytes(bytes / median(s.map((x) => x.chunks)))}, raw ${fmtBytes(bytes / median(r.map((x) => x.chunks)))}`,
      `            CPU time of this process (user+sys) per GiB: sandstream ${fmtMs((median(s.map((x) => x.cpuMs)) * GiB) / bytes)}, ` +
        `raw ${fmtMs((median(r.map((x) => x.cpuMs)) * GiB) / bytes)}`,
      `            context: raw with detached: true (own session and group, as the adapter spawns) ${fmtRate(dRate)}, ` +
        `sandstream/that ${(sRate / dRate).toFixed(3)}x`,
    ],
  };
}

// ---- 2. run(['true']) round trip --------------------------------------------

async function roundTripSandstream(sb) {
  const t0 = now();
  const result = await sb.run(['true']);
  const ms = now() - t0;
  if (result.exitCode !== 0) throw new Error(`sandstream run(true): exit ${result.exitCode}`);
  return ms;
}

async function roundTripRaw(detached = false) {
  const t0 = now();
  const { child, closed } = rawSpawn(['true'], { detached });
  if (detached) groups.delete(child.pid);
  const [code] = await closed;
  const ms = now() - t0;
  if (code !== 0) throw new Error(`raw true: exit ${code}`);
  return ms;
}

async function benchRoundTrip(sb, cfg) {
  for (let i = 0; i < cfg.roundTripWarmup; i++) {
    await roundTripSandstream(sb);
    await roundTripRaw();
  }
  const s = [];
  const r = [];
  const d = [];
  for (let i = 0; i < cfg.roundTripIters; i++) {
    if (i % 2 === 0) {
      s.push(await roundTripSandstream(sb));
      r.push(await roundTripRaw());
      d.push(await roundTripRaw(true));
    } else {
      d.push(await roundTripRaw(true));
      r.push(await roundTripRaw());
      s.push(await roundTripSandstream(sb));
    }
  }
  const sm = median(s);
  const rm = median(r);
  const dm = median(d);
  const ratio = sm / rm;
  return {
    row: {
      name: "run(['true']) round trip, median",
      sandstream: fmtMs(sm),
      raw: fmtMs(rm),
      ratio: `${ratio.toFixed(3)}x`,
      target: '<= 1.15x',
      pass: ratio <= 1.15,
    },
    details: [
      `round trip: ${cfg.roundTripIters} iterations each after ${cfg.roundTripWarmup} warm-up, alternating; ` +
        `p10/p90 sandstream ${fmtMs(quantile(s, 0.1))}/${fmtMs(quantile(s, 0.9))}, raw ${fmtMs(quantile(r, 0.1))}/${fmtMs(quantile(r, 0.9))}; ` +
        `median of paired ratios ${median(s.map((x, i) => x / r[i])).toFixed(3)}x`,
      `            context: raw with detached: true ${fmtMs(dm)}, sandstream/that ${(sm / dm).toFixed(3)}x`,
    ],
  };
}

// ---- 3. run() capture --------------------------------------------------------

async function captureSandstream(sb, bytes) {
  const t0 = now();
  const result = await sb.run(ddArgs(bytes), { maxOutputBytes: bytes + MiB });
  const ms = now() - t0;
  if (result.stdout.byteLength !== bytes || result.stdoutTruncated || result.exitCode !== 0) {
    throw new Error(`sandstream capture: ${result.stdout.byteLength} bytes, exit ${result.exitCode}`);
  }
  return ms;
}

async function captureRaw(bytes) {
  const t0 = now();
  const parts = [];
  const { closed } = rawSpawn(ddArgs(bytes), { onData: (data) => parts.push(data) });
  const [code] = await closed;
  const out = Buffer.concat(parts);
  const ms = now() - t0;
  if (out.byteLength !== bytes || code !== 0) throw new Error(`raw capture: ${out.byteLength} bytes, exit ${code}`);
  return ms;
}

async function benchCapture(sb, cfg) {
  const bytes = cfg.captureBytes;
  await captureSandstream(sb, Math.min(bytes, 16 * MiB));
  await captureRaw(Math.min(bytes, 16 * MiB));
  const s = [];
  const r = [];
  for (let i = 0; i < cfg.captureReps; i++) {
    if (i % 2 === 0) {
      s.push(await captureSandstream(sb, bytes));
      r.push(await captureRaw(bytes));
    } else {
      r.push(await captureRaw(bytes));
      s.push(await captureSandstream(sb, bytes));
    }
  }
  const sm = median(s);
  const rm = median(r);
  const ratio = sm / rm;
  return {
    row: {
      name: `run() capture of ${fmtBytes(bytes)}, median`,
      sandstream: fmtMs(sm),
      raw: fmtMs(rm),
      ratio: `${ratio.toFixed(3)}x`,
      target: '<= 1.3x',
      pass: ratio <= 1.3,
    },
    details: [
      `capture: ${cfg.captureReps} reps each, alternating; sandstream ${s.map(fmtMs).join(' ')}`,
      `         raw Buffer[] + Buffer.concat ${r.map(fmtMs).join(' ')}`,
    ],
  };
}

// ---- 4. teardown ---------------------------------------------------------------

const TEARDOWN_CASES = [
  {
    key: 'sleep',
    label: 'teardown, SIGTERM-honouring child',
    argv: ['sleep', '1000'],
    // No output to wait for: the 'spawn' event means exec succeeded.
    ready: 'spawn',
    scope: 'await using (asyncDispose)',
    limit: () => 10,
  },
  {
    key: 'tree',
    label: 'teardown, process tree',
    argv: ['sh', '-c', 'sleep 1000 & sleep 1000 & echo ready; wait'],
    ready: 'output',
    scope: 'break out of for await',
    limit: () => 20,
  },
  {
    key: 'ignore',
    label: 'teardown, SIGTERM-ignoring tree',
    // SIG_IGN survives exec, so every sleep the loop starts ignores TERM too.
    argv: ['sh', '-c', 'trap "" TERM; echo ready; while :; do sleep 0.05; done'],
    ready: 'output',
    scope: 'break out of for await',
    ignoresTerm: true,
    limit: (grace) => grace + 20,
  },
];

async function teardownSandstream(sb, probe, tc, grace) {
  const proc = sb.stream(tc.argv);
  let armed;
  let t0;
  if (tc.ready === 'spawn') {
    while (proc.pid === undefined) await new Promise((resolve) => setImmediate(resolve));
    track(proc.pid);
    armed = await probe.arm(proc.pid, grace + 5000);
    t0 = hrnow();
    await proc[Symbol.asyncDispose]();
  } else {
    for await (const chunk of proc) {
      void chunk;
      track(proc.pid);
        armed = await probe.arm(proc.pid, grace + 5000);
      t0 = hrnow();
      break;
    }
  }
  const settledAt = hrnow();
  const gone = await armed.gone;
  return finishTeardown(proc.pid, t0, settledAt, gone);
}

async function teardownRaw(probe, tc, grace) {
  let resolveReady;
  const ready = new Promise((resolve) => (resolveReady = resolve));
  const { child, closed } = rawSpawn(tc.argv, { detached: true, onData: () => resolveReady() });
  if (tc.ready === 'spawn') await once(child, 'spawn');
  else await ready;
  const pgid = child.pid;
  const armed = await probe.arm(pgid, grace + 5000);
  const t0 = hrnow();
  // The raw equivalent of the runtime's teardown: TERM the group, KILL it
  // after the grace period if the leader has not exited.
  let timer;
  try {
    process.kill(-pgid, 'SIGTERM');
    timer = setTimeout(() => {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // gone
      }
    }, grace);
  } catch {
    // gone
  }
  child.once('exit', () => clearTimeout(timer));
  await closed;
  clearTimeout(timer);
  const settledAt = hrnow();
  const gone = await armed.gone;
  return finishTeardown(pgid, t0, settledAt, gone);
}

function finishTeardown(pgid, t0, settledAt, gone) {
  if (process.env.BENCH_DEBUG) {
    const ms = (at) => (Number(at - t0) / 1e6).toFixed(3);
    process.stderr.write(`teardown pgid ${pgid}: gone ${ms(gone.at)} ms (${gone.how}, ${gone.polls} polls), scope left ${ms(settledAt)} ms\n`);
  }
  if (gone.how === 'timeout') {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  groups.delete(pgid);
  return {
    goneMs: Number(gone.at - t0) / 1e6,
    settledMs: Number(settledAt - t0) / 1e6,
    how: gone.how,
    polls: gone.polls,
  };
}

async function benchTeardown(cfg) {
  const grace = cfg.graceMs;
  const sb = createLocalSandbox({ graceMs: grace });
  const probe = new GroupProbe();
  const rows = [];
  const details = [];
  const hows = new Map();
  try {
    for (const tc of TEARDOWN_CASES) {
      const reps = tc.ignoresTerm ? cfg.teardownSlowReps : cfg.teardownReps;
      // Warm-up pair.
      await teardownSandstream(sb, probe, tc, grace);
      await teardownRaw(probe, tc, grace);
      const s = [];
      const r = [];
      for (let i = 0; i < reps; i++) {
        if (i % 2 === 0) {
          s.push(await teardownSandstream(sb, probe, tc, grace));
          r.push(await teardownRaw(probe, tc, grace));
        } else {
          r.push(await teardownRaw(probe, tc, grace));
          s.push(await teardownSandstream(sb, probe, tc, grace));
        }
      }
      for (const x of [...s, ...r]) hows.set(x.how, (hows.get(x.how) ?? 0) + 1);
      const timedOut = s.some((x) => x.how === 'timeout');
      const sm = median(s.map((x) => x.goneMs));
      const rm = median(r.map((x) => x.goneMs));
      const limit = tc.limit(grace);
      rows.push({
        name: `${tc.label}, median${tc.ignoresTerm ? ` (grace ${grace} ms)` : ''}`,
        sandstream: fmtMs(sm),
        raw: fmtMs(rm),
        ratio: `${(sm / rm).toFixed(2)}x`,
        target: `<= ${limit} ms`,
        pass: !timedOut && sm <= limit,
      });
      details.push(
        `${tc.key}: ${JSON.stringify(tc.argv.join(' '))}, scope exit by ${tc.scope}; ${reps} reps each, alternating`,
        `  scope exit -> group gone: sandstream max ${fmtMs(Math.max(...s.map((x) => x.goneMs)))}, raw max ${fmtMs(Math.max(...r.map((x) => x.goneMs)))}`,
        `  scope exit -> scope left (dispose resolved / raw 'close'): sandstream median ${fmtMs(median(s.map((x) => x.settledMs)))}, raw median ${fmtMs(median(r.map((x) => x.settledMs)))}`,
      );
    }
  } finally {
    await sb.close();
    await probe.close();
  }
  const howText = [...hows].map(([how, n]) => `${how} ${n}`).join(', ');
  details.push(`teardown "gone" observations: ${howText}`);
  if (hows.has('zombies')) {
    details.push(
      '  (zombies = every member had ended, but orphaned members still awaited reaping by the init process, which on',
      '   some machines reaps only periodically, so kill(-pgid, 0) kept succeeding; the moment the last member ended',
      '   is reported instead)',
    );
  }
  return { rows, details };
}

// ---- 5. peak RSS with a slow consumer (measured in fresh processes) --------------

const SLOW_EVERY = 2 * MiB;
const SLOW_PAUSE_MS = 5;

async function rssChild(variant, bytes) {
  const sb = createLocalSandbox();
  gc();
  await sleep(20);
  gc();
  const base = process.memoryUsage.rss();
  let peak = base;
  let peakExternal = 0;
  const sample = () => {
    const rss = process.memoryUsage.rss();
    if (rss > peak) peak = rss;
  };
  const timer = setInterval(() => {
    const usage = process.memoryUsage();
    if (usage.rss > peak) peak = usage.rss;
    if (usage.arrayBuffers > peakExternal) peakExternal = usage.arrayBuffers;
  }, 2);
  const t0 = now();
  let total = 0;
  let sinceNap = 0;
  let chunks = 0;
  if (variant === 'sandstream') {
    const proc = sb.stream(ddArgs(bytes));
    for await (const chunk of proc) {
      if (total === 0) track(proc.pid);
      total += chunk.data.byteLength;
      sinceNap += chunk.data.byteLength;
      if (++chunks % 16 === 0) sample();
      if (sinceNap >= SLOW_EVERY) {
        sinceNap = 0;
        await sleep(SLOW_PAUSE_MS);
      }
    }
    await proc[Symbol.asyncDispose]();
  } else {
    // Raw with flow control: pause() the pipe while the consumer is busy.
    const { child, closed } = rawSpawn(ddArgs(bytes), {
      detached: true,
      onData: (data) => {
        total += data.byteLength;
        sinceNap += data.byteLength;
        if (++chunks % 16 === 0) sample();
        if (sinceNap >= SLOW_EVERY) {
          sinceNap = 0;
          child.stdout.pause();
          setTimeout(() => child.stdout.resume(), SLOW_PAUSE_MS);
        }
      },
    });
    await closed;
  }
  clearInterval(timer);
  sample();
  const ms = now() - t0;
  await sb.close();
  process.stdout.write(`${JSON.stringify({ variant, bytes, total, base, peak, peakExternal, ms })}\n`);
}

async function rssInFreshProcess(variant, bytes) {
  const child = spawn(process.execPath, ['--expose-gc', SELF, `--rss-child=${variant}`, `--bytes=${bytes}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  helpers.add(child);
  let out = '';
  child.stdout.on('data', (data) => (out += data));
  const [code] = await once(child, 'close');
  helpers.delete(child);
  if (code !== 0) throw new Error(`RSS helper (${variant}) exited with ${code}`);
  const result = JSON.parse(out.trim().split('\n').pop());
  if (result.total !== bytes) throw new Error(`RSS helper (${variant}) read ${result.total} of ${bytes} bytes`);
  return result;
}

async function benchRss(cfg) {
  const bytes = cfg.rssBytes;
  const s = [];
  const r = [];
  for (let i = 0; i < cfg.rssReps; i++) {
    if (i % 2 === 0) {
      s.push(await rssInFreshProcess('sandstream', bytes));
      r.push(await rssInFreshProcess('raw', bytes));
    } else {
      r.push(await rssInFreshProcess('raw', bytes));
      s.push(await rssInFreshProcess('sandstream', bytes));
    }
  }
  const growth = (x) => x.peak - x.base;
  const sm = median(s.map(growth));
  const rm = median(r.map(growth));
  return {
    row: {
      name: `peak RSS growth, ${fmtBytes(bytes)} to a slow consumer, median`,
      sandstream: fmtMiB(sm),
      raw: fmtMiB(rm),
      ratio: `${(sm / rm).toFixed(2)}x`,
      target: '<= 64 MiB',
      pass: sm <= 64 * MiB,
    },
    details: [
      `rss: consumer waits ${SLOW_PAUSE_MS} ms after every ${fmtBytes(SLOW_EVERY)}; each run in a fresh Node process; ${cfg.rssReps} reps each, alternating`,
      `     sandstream: growth ${s.map((x) => fmtMiB(growth(x))).join(' ')}; peak ArrayBuffer memory ${fmtMiB(median(s.map((x) => x.peakExternal)))}; ${fmtMs(median(s.map((x) => x.ms)))}`,
      `     raw with pause()/resume(): growth ${r.map((x) => fmtMiB(growth(x))).join(' ')}; peak ArrayBuffer memory ${fmtMiB(median(r.map((x) => x.peakExternal)))}; ${fmtMs(median(r.map((x) => x.ms)))}`,
    ],
  };
}

// ---- 6. isolation: namespaces vs plain --------------------------------------

// Both sides are Sandstream sandboxes; commands of the isolated one are not
// tracked by pid (its pids are the sandbox's own): its close() ends them all.

async function streamBytes(sb, bytes) {
  const t0 = now();
  const proc = sb.stream(ddArgs(bytes));
  let total = 0;
  for await (const chunk of proc) total += chunk.data.byteLength;
  const ms = now() - t0;
  const result = await proc.wait();
  await proc[Symbol.asyncDispose]();
  if (total !== bytes || result.exitCode !== 0) throw new Error(`stream: ${total} bytes, exit ${result.exitCode}`);
  return ms;
}

const BWRAP_SHOWN = BWRAP_ARGS.join(' ');

async function createRunClose(options) {
  const t0 = now();
  const sb = createLocalSandbox(options);
  const result = await sb.run(['true']);
  const t1 = now();
  await sb.close();
  const t2 = now();
  if (result.exitCode !== 0) throw new Error(`run(true) in a new sandbox: exit ${result.exitCode}`);
  return { ready: t1 - t0, close: t2 - t1, total: t2 - t0 };
}

async function benchIsolation(plain, cfg) {
  let isolated;
  try {
    isolated = createLocalSandbox({ isolation: 'namespaces' });
  } catch (error) {
    return { details: [`isolation: not measured: ${error.message}`] };
  }
  try {
    const via = isolated.native.sandbox.via;
    // Round trip.
    for (let i = 0; i < cfg.roundTripWarmup; i++) {
      await roundTripSandstream(isolated);
      await roundTripSandstream(plain);
    }
    const ri = [];
    const rp = [];
    for (let i = 0; i < cfg.isolationRoundTrips; i++) {
      if (i % 2 === 0) {
        ri.push(await roundTripSandstream(isolated));
        rp.push(await roundTripSandstream(plain));
      } else {
        rp.push(await roundTripSandstream(plain));
        ri.push(await roundTripSandstream(isolated));
      }
    }
    // Sandbox creation, a first command, close(); beside them, bubblewrap's
    // one-shot sandbox, rotating the order so all three share machine noise.
    const bwrap = bubblewrap();
    const ci = [];
    const cp = [];
    const cb = [];
    const steps = [
      async () => ci.push(await createRunClose({ isolation: 'namespaces' })),
      async () => cp.push(await createRunClose({})),
      ...(bwrap.path === undefined ? [] : [async () => cb.push(await bwrapOnce(bwrap.path, now))]),
    ];
    for (const step of steps) await step(); // warm-up
    ci.length = cp.length = cb.length = 0;
    for (let i = 0; i < cfg.isolationCreates; i++) {
      for (let j = 0; j < steps.length; j++) await steps[(i + j) % steps.length]();
    }
    // Throughput.
    const bytes = cfg.streamBytes;
    await streamBytes(isolated, Math.min(bytes, 64 * MiB));
    await streamBytes(plain, Math.min(bytes, 64 * MiB));
    const ti = [];
    const tp = [];
    for (let i = 0; i < cfg.isolationStreamReps; i++) {
      if (i % 2 === 0) {
        ti.push(await streamBytes(isolated, bytes));
        tp.push(await streamBytes(plain, bytes));
      } else {
        tp.push(await streamBytes(plain, bytes));
        ti.push(await streamBytes(isolated, bytes));
      }
    }
    const rtI = median(ri);
    const rtP = median(rp);
    const totalI = median(ci.map((x) => x.total));
    const totalP = median(cp.map((x) => x.total));
    const rateI = median(ti.map((ms) => bytes / ms));
    const rateP = median(tp.map((ms) => bytes / ms));
    return {
      rows: [
        {
          name: "isolated vs plain: run(['true']) round trip, median",
          sandstream: fmtMs(rtI),
          raw: `plain ${fmtMs(rtP)}`,
          ratio: `${(rtI / rtP).toFixed(3)}x`,
          target: 'stated',
          pass: true,
        },
        {
          name: 'isolated vs plain: create, run(true), close(), median',
          sandstream: fmtMs(totalI),
          raw: `plain ${fmtMs(totalP)}`,
          ratio: `${(totalI / totalP).toFixed(3)}x`,
          target: 'stated',
          pass: true,
        },
        ...(bwrap.path === undefined
          ? []
          : [
              {
                name: 'isolated create, run(true), close() vs bubblewrap one-shot, median',
                sandstream: fmtMs(totalI),
                raw: `bwrap ${fmtMs(median(cb))}`,
                ratio: `${(totalI / median(cb)).toFixed(2)}x`,
                target: '<= 3x',
                pass: totalI / median(cb) <= 3,
              },
            ]),
        {
          name: `isolated vs plain: stream() throughput, ${fmtBytes(bytes)}`,
          sandstream: fmtRate(rateI),
          raw: `plain ${fmtRate(rateP)}`,
          ratio: `${(rateI / rateP).toFixed(3)}x`,
          target: '>= 0.95x',
          pass: rateI / rateP >= 0.95,
        },
      ],
      details: [
        `isolation: namespaces made as ${via}; in the rows above "sandstream" is the isolated sandbox and the raw column the plain one`,
        `           round trip: ${cfg.isolationRoundTrips} each, alternating; overhead of isolation ${fmtMs(rtI - rtP)} per command ` +
          `(p10/p90 isolated ${fmtMs(quantile(ri, 0.1))}/${fmtMs(quantile(ri, 0.9))}, plain ${fmtMs(quantile(rp, 0.1))}/${fmtMs(quantile(rp, 0.9))})`,
        `           creation: ${cfg.isolationCreates} each; isolated: first command done after ${fmtMs(median(ci.map((x) => x.ready)))}, ` +
          `close() ${fmtMs(median(ci.map((x) => x.close)))}; plain: ${fmtMs(median(cp.map((x) => x.ready)))}, ${fmtMs(median(cp.map((x) => x.close)))}`,
        `           isolated create-run-close p10/p90 ${fmtMs(quantile(ci.map((x) => x.total), 0.1))}/${fmtMs(quantile(ci.map((x) => x.total), 0.9))}`,
        bwrap.path === undefined
          ? `           bubblewrap: not measured: ${bwrap.absent}; the isolated mode's own figures above stand alone`
          : `           bubblewrap: ${bwrap.version}, ${cfg.isolationCreates} one-shot runs, alternating with the two sandboxes: ` +
            `\`${bwrap.path} ${BWRAP_SHOWN}\`, p10/p90 ${fmtMs(quantile(cb, 0.1))}/${fmtMs(quantile(cb, 0.9))}; ` +
            `median of paired ratios ${median(ci.map((x, i) => x.total / cb[i])).toFixed(2)}x`,
        `           throughput: ${cfg.isolationStreamReps} reps each, alternating; isolated ${ti.map((ms) => fmtRate(bytes / ms)).join(' ')}`,
        `                       plain ${tp.map((ms) => fmtRate(bytes / ms)).join(' ')}`,
      ],
    };
  } finally {
    await isolated.close();
  }
}

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
  const args = { quick: false, only: undefined, rssChild: undefined, bytes: undefined };
  for (const arg of argv) {
    if (arg === '--quick') args.quick = true;
    else if (arg.startsWith('--only=')) args.only = new Set(arg.slice(7).split(','));
    else if (arg.startsWith('--rss-child=')) args.rssChild = arg.slice(12);
    else if (arg.startsWith('--bytes=')) args.bytes = Number(arg.slice(8));
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write('usage: node --expose-gc bench/run.mjs [--quick] [--only=throughput,roundtrip,capture,teardown,rss,isolation]\n');
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
