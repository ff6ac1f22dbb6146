// Job 5 of the benchmark: peak RSS with a slow consumer, each run in a
// fresh Node process (this benchmark's run.mjs with --rss-child).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createLocalSandbox, ddArgs, fmtBytes, fmtMiB, fmtMs, gc, helpers, median, MiB, now, rawSpawn, track } from './common.mjs';

/** The script a fresh process runs to measure: the benchmark's entry point. */
const RUN_SCRIPT = fileURLToPath(new URL('./run.mjs', import.meta.url));

const SLOW_EVERY = 2 * MiB;
const SLOW_PAUSE_MS = 5;

export async function rssChild(variant, bytes) {
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
  const child = spawn(process.execPath, ['--expose-gc', RUN_SCRIPT, `--rss-child=${variant}`, `--bytes=${bytes}`], {
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

export async function benchRss(cfg) {
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
