import { check, checkErrorCode, ConformanceFailure, thrownBy } from '../assert.js';
import { defineCase } from '../case.js';
import { collect } from './support/collect.js';
import { bound, readMarker, scratch, settledWithin } from './support/observe.js';
import { Progress } from './support/progress.js';

const FLOW_LINES = 1_600_000;
// 16 MiB of numbered 10-byte lines; every 100000 lines the count written so far goes to "progress".
const FLOW_SCRIPT = `awk -v p="$1/progress" 'BEGIN { for (i = 1; i <= ${FLOW_LINES}; i++) { printf "%09d\\n", i; if (i % 100000 == 0) { print i > p; close(p) } } }'`;

/** What FLOW_SCRIPT writes, built byte by byte: a string of 1.6 million lines joined takes twenty times as long. */
function flowOutput(): Buffer {
  const out = Buffer.alloc(FLOW_LINES * 10);
  const line = Buffer.from('000000000\n', 'latin1');
  for (let i = 0; i < FLOW_LINES; i++) {
    // The next number, in place: carry over the nines.
    let digit = 8;
    while (line[digit] === 0x39) line[digit--] = 0x30;
    line[digit]! += 1;
    for (let k = 0; k < 10; k++) out[i * 10 + k] = line[k]!;
  }
  return out;
}

function checkFlow(stdout: Uint8Array): void {
  const expected = flowOutput();
  if (Buffer.compare(Buffer.from(stdout), expected) === 0) return;
  const got = Buffer.from(stdout);
  let at = 0;
  while (at < got.length && at < expected.length && got[at] === expected[at]) at++;
  const line = Math.floor(at / 10) + 1;
  throw new ConformanceFailure(
    `the output held back unread arrived with ${got.length} of ${expected.length} bytes, wrong from line ${line} on ` +
      `(got ${JSON.stringify(got.subarray(line * 10 - 10, line * 10 + 10).toString('latin1'))}): bytes were lost, duplicated or reordered while the reader was behind`,
  );
}

/** Iterating a Process: SS-STREAM-2. */
export const iterationCases = [
  defineCase({
    id: 'stream.tagged-chunks',
    title: '"A Process MUST be an async iterable of OutputChunks, each tagged stdout or stderr with its bytes as a Uint8Array": what a command prints to each stream arrives tagged with it',
    requirements: ['SS-STREAM-2'],
    needs: ['streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['sh', '-c', 'printf out; printf err >&2']);
      const seen = { stdout: '', stderr: '' };
      for await (const chunk of proc) {
        check(chunk.stream === 'stdout' || chunk.stream === 'stderr', `a chunk has stream ${JSON.stringify(chunk.stream)}`);
        check(chunk.data instanceof Uint8Array, 'a chunk\'s data is not a Uint8Array');
        seen[chunk.stream] += Buffer.from(chunk.data).toString('latin1');
      }
      check(seen.stdout === 'out' && seen.stderr === 'err', `expected "out" on stdout and "err" on stderr, got ${JSON.stringify(seen)}`);
    },
  }),
  defineCase({
    id: 'stream.single-iteration',
    title: '"MUST be iterable at most once; a second iteration MUST raise InvalidState": and the first iterator still reads all the output',
    requirements: ['SS-STREAM-2'],
    needs: ['streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['echo', 'once']);
      const first = proc[Symbol.asyncIterator]();
      const error = thrownBy(() => proc[Symbol.asyncIterator](), 'a second [Symbol.asyncIterator]() call');
      checkErrorCode(error, 'INVALID_STATE', 'a second iteration');
      let text = '';
      for (let next = await first.next(); !next.done; next = await first.next()) {
        text += Buffer.from(next.value.data).toString();
      }
      check(text === 'once\n', `the first iterator lost output after a refused second iteration (got ${JSON.stringify(text)})`);
    },
  }),
];

/** Output left unread: SS-FLOW-1. */
export const unreadOutputCases = [
  defineCase({
    id: 'flow.unread-beyond-high-water',
    title: '"Output left unread beyond the high-water mark MUST be delivered in full and in order once the reader reads it": 16 MiB held unread, then read',
    requirements: ['SS-FLOW-1'],
    needs: ['streaming'],
    runsAlone: 'it moves 16 MiB while holding it unread, which would starve the timing checks of cases beside it',
    timeoutMs: 60_000,
    async run(ctx) {
      const dir = await scratch(ctx);
      await using proc = ctx.sandbox.stream(['sh', '-c', FLOW_SCRIPT, 'sh', dir]);
      // Nothing is read until the command has written all of it or is held back: its progress stands
      // still for several times the longest it ever took to advance. A fixed pause would break off
      // early on a loaded machine, where awk is merely slow, and the case would read before any
      // pause happened, proving nothing.
      // A command that has written nothing at all within a generous start bound is not going to (an
      // adapter that starts it only once it is read, which start.eager reports): read it then.
      const step = await bound(ctx, 200);
      const begun = performance.now();
      const deadline = begun + (await bound(ctx, 30_000));
      const unstarted = begun + (await bound(ctx, 10_000));
      // The watch begins once the command has started: a late start is not the command writing slowly,
      // and counted as its slowest advance it would hold the reader back four times as long as the start
      // took. A start that fails or never comes is left to the reading below (and to start.eager).
      await settledWithin(proc.started(), Math.max(0, unstarted - performance.now()));
      const watch = new Progress();
      for (;;) {
        const progress = Number((await readMarker(ctx, `${dir}/progress`))?.trim() ?? '0');
        const now = performance.now();
        const stillFor = watch.see(progress, now);
        if (progress >= FLOW_LINES || (progress > 0 && watch.stuck(stillFor, step)) || (progress === 0 && now > unstarted) || now > deadline) break;
        await ctx.sleep(step);
      }
      const got = await collect(proc);
      const result = await proc.wait();
      check(result.exitCode === 0, `the command reports ${result.exitCode}/${result.signal}`);
      checkFlow(got.stdout);
    },
  }),
];
