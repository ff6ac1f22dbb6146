// Job 4 of the benchmark: teardown, from the consumer's ending action to
// the whole group gone, watched by a worker thread (group-probe.mjs).
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { createLocalSandbox, fmtMs, groups, hrnow, median, rawSpawn, track } from './common.mjs';

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

export async function benchTeardown(cfg) {
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
