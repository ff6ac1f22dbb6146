// First-output latency with and without a terminal (spec 1.5, capability pty).
//
//   npm run bench:first-output -w @sandstream/adapter-local [-- --runs=N]
//
// Python, like most programs, buffers its standard output fully when it is not
// a terminal: through pipes, `print(1)` stays in the program's buffer until it
// exits, however live the transport. On a terminal it is line-buffered and the
// line leaves at once. This script streams
//     python3 -c 'print(1); import time; time.sleep(2)'
// with and without `pty`, alternating the two so they share machine noise,
// and prints, per variant, the median time from stream() to the first output
// byte and to the exit, and how many runs saw output before the exit. It only
// reports; it exits 0 whatever the figures.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLocalSandbox, loadAdapter, median } from './common.mjs';

const SCRIPT = 'print(1); import time; time.sleep(2)';
const SIZE = { cols: 80, rows: 24 };

function parseRuns(argv) {
  const arg = argv.find((each) => each.startsWith('--runs='));
  const runs = arg === undefined ? 5 : Number(arg.slice('--runs='.length));
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, got ${arg}`);
  return runs;
}

/** One run: ms from stream() to the first output byte, and to the end. */
async function once(sb, env, pty) {
  const started = performance.now();
  const proc = sb.stream(['python3', '-c', SCRIPT], { env, ...(pty ? { pty: SIZE } : {}) });
  let first;
  let text = '';
  let result;
  try {
    for await (const chunk of proc) {
      first ??= performance.now() - started;
      text += Buffer.from(chunk.data).toString('latin1');
    }
    result = await proc.wait();
  } finally {
    await proc[Symbol.asyncDispose]();
  }
  const ended = performance.now() - started;
  if (result.exitCode !== 0 || !text.includes('1')) throw new Error(`python3 ended with ${JSON.stringify(result)} and printed ${JSON.stringify(text)}`);
  return { first, ended };
}

async function main() {
  const runs = parseRuns(process.argv.slice(2));
  if (spawnSync('python3', ['-c', 'pass']).status !== 0) {
    process.stdout.write('bench: python3 is not on PATH; nothing measured\n');
    return;
  }
  await loadAdapter();
  // The sandbox's base environment is this process's without PYTHONUNBUFFERED, which would make
  // python3 write through pipes at once and hide what this measures.
  const { PYTHONUNBUFFERED: _unbuffered, ...base } = process.env;
  const sb = createLocalSandbox({ env: base });
  if (sb.capabilities.pty !== true) {
    process.stdout.write(`bench: this adapter has no pty (${sb.native.ptyUnavailable ?? 'no reason given'}); nothing measured\n`);
    await sb.close();
    return;
  }
  // A home of its own: no user site or startup file changes what python3 does at start.
  const home = mkdtempSync(path.join(os.tmpdir(), 'sandstream-first-output-'));
  const env = { HOME: home, PYTHONSTARTUP: '' };
  const samples = { pty: [], pipes: [] };
  try {
    await once(sb, env, true);
    await once(sb, env, false);
    for (let run = 0; run < runs; run++) {
      samples.pty.push(await once(sb, env, true));
      samples.pipes.push(await once(sb, env, false));
    }
  } finally {
    await sb.close();
    rmSync(home, { recursive: true, force: true });
  }
  console.log(`first output of python3 -c '${SCRIPT}' on adapter-local, ${runs} runs each, alternating (${new Date().toISOString()}, load ${os.loadavg()[0].toFixed(2)})`);
  console.log('variant  first output (median)  exit (median)  first output before the exit');
  const summary = {};
  for (const [name, list] of Object.entries(samples)) {
    const first = median(list.map((s) => s.first));
    const ended = median(list.map((s) => s.ended));
    // "Before the exit": at least a second before it, since the program sleeps 2 s after printing.
    const early = list.filter((s) => s.ended - s.first > 1_000).length;
    summary[name] = first;
    console.log(`${name.padEnd(7)}  ${`${first.toFixed(1)} ms`.padStart(21)}  ${`${ended.toFixed(1)} ms`.padStart(13)}  ${early} of ${list.length}`);
  }
  console.log(`ratio (pipes / pty, first output): ${(summary.pipes / summary.pty).toFixed(1)}x`);
}

await main();
