// Job 6 of the benchmark: isolation, namespaces against plain, and an
// isolated create-run-close beside bubblewrap's one-shot sandbox.
import { BWRAP_ARGS, bubblewrap, bwrapOnce } from './bubblewrap.mjs';
import { roundTripSandstream } from './calls.mjs';
import { createLocalSandbox, ddArgs, fmtBytes, fmtMs, fmtRate, median, MiB, now, quantile } from './common.mjs';

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

async function createRunClose(options, create = createLocalSandbox) {
  const t0 = now();
  const sb = create(options);
  const result = await sb.run(['true']);
  const t1 = now();
  await sb.close();
  const t2 = now();
  if (result.exitCode !== 0) throw new Error(`run(true) in a new sandbox: exit ${result.exitCode}`);
  return { ready: t1 - t0, close: t2 - t1, total: t2 - t0 };
}

export async function benchIsolation(plain, cfg) {
  let isolated;
  try {
    isolated = createLocalSandbox({ isolation: 'namespaces' });
  } catch (error) {
    return { details: [`isolation: not measured: ${error.message}`] };
  }
  // The other build's sandboxes start as this build's do: with one of its own held open.
  const other = cfg.against === undefined ? undefined : cfg.against.createLocalSandbox({ isolation: 'namespaces' });
  try {
    if (other !== undefined) await other.run(['true']);
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
    const co = [];
    const steps = [
      ...(other === undefined ? [] : [async () => co.push(await createRunClose({ isolation: 'namespaces' }, cfg.against.createLocalSandbox))]),
      async () => ci.push(await createRunClose({ isolation: 'namespaces' })),
      async () => cp.push(await createRunClose({})),
      ...(bwrap.path === undefined ? [] : [async () => cb.push(await bwrapOnce(bwrap.path, now))]),
    ];
    for (const step of steps) await step(); // warm-up
    ci.length = cp.length = cb.length = co.length = 0;
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
                target: '<= 2x',
                pass: totalI / median(cb) <= 2,
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
        ...(other === undefined
          ? []
          : [
              `           against ${cfg.against.path}: create-run-close median ${fmtMs(median(co.map((x) => x.total)))}` +
                (cb.length === 0 ? '' : ` (${(median(co.map((x) => x.total)) / median(cb)).toFixed(2)}x bwrap)`) +
                `; this build / that one, median of paired ratios ${median(ci.map((x, i) => x.total / co[i].total)).toFixed(3)}x`,
            ]),
        `           throughput: ${cfg.isolationStreamReps} reps each, alternating; isolated ${ti.map((ms) => fmtRate(bytes / ms)).join(' ')}`,
        `                       plain ${tp.map((ms) => fmtRate(bytes / ms)).join(' ')}`,
      ],
    };
  } finally {
    await isolated.close();
    await other?.close();
  }
}
