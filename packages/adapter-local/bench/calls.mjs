// Jobs 1-3 of the benchmark: stream() throughput, run(['true']) round trip,
// run() capture, each against raw child_process.spawn.
import { BLOCK, ddArgs, fmtBytes, fmtMs, fmtRate, GiB, groups, KiB, median, MiB, now, quantile, rawSpawn, track } from './common.mjs';

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

export async function benchThroughput(sb, cfg) {
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

export async function roundTripSandstream(sb) {
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

export async function benchRoundTrip(sb, cfg) {
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

export async function benchCapture(sb, cfg) {
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
