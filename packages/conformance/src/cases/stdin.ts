import { randomBytes } from 'node:crypto';
import type { ExecResult, ResourceLimits } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, codeOf, ConformanceFailure, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { ALL_BYTES, collect } from './collect.js';
import { bound, scratch, settledWithin } from './support/observe.js';
import { untilReady } from './tree.js';

/**
 * Runs `argv` under `options` through run() and, with streaming, through
 * stream() (read to the end), so a limit is proved on both paths. A last
 * argument "run" or "stream" tells the command which path started it.
 */
async function underBoth(
  ctx: CaseContext,
  argv: readonly string[],
  options: { limits: ResourceLimits; timeout?: number },
): Promise<Array<{ how: string; result: ExecResult }>> {
  const tagged = (how: string): string[] => (argv[0] === 'sh' ? [...argv, how] : [...argv]);
  const results = [{ how: 'run()', result: await ctx.sandbox.run(tagged('run'), options) }];
  if (ctx.sandbox.capabilities.streaming) {
    await using proc = ctx.sandbox.stream(tagged('stream'), options);
    for await (const chunk of proc) void chunk;
    results.push({ how: 'stream()', result: await proc.wait() });
  }
  return results;
}

export const stdinCases = [
  defineCase({
    id: 'stdin.echo-and-eof',
    title: 'writes through the stdin writer arrive in order and end() delivers end-of-file',
    requirements: ['SS-STDIN-1'],
    needs: ['stdin', 'streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['sh', '-c', 'cat; echo eof-seen >&2'], { stdin: 'pipe' });
      check(proc.stdin !== null, 'stdin: "pipe" gave no writer');
      const writes = Array.from({ length: 200 }, (_, i) => proc.stdin!.write(`${i},`));
      await Promise.all(writes);
      await proc.stdin.end();
      const got = await collect(proc);
      checkEqual(Buffer.from(got.stdout).toString(), Array.from({ length: 200 }, (_, i) => `${i},`).join(''), 'what cat echoed');
      checkEqual(Buffer.from(got.stderr).toString(), 'eof-seen\n', 'what the command printed after end-of-file');
      check((await proc.wait()).exitCode === 0, 'the command did not exit 0 after end-of-file');
    },
  }),
  defineCase({
    id: 'stdin.large-input',
    title: 'several MiB written while output is read concurrently arrive intact',
    requirements: ['SS-STDIN-1'],
    needs: ['stdin', 'streaming'],
    timeoutMs: 30_000,
    async run(ctx) {
      const data = randomBytes(6 * 1024 * 1024);
      await using proc = ctx.sandbox.stream(['cat'], { stdin: 'pipe' });
      const reading = collect(proc);
      for (let offset = 0; offset < data.length; offset += 100_000) {
        await proc.stdin!.write(new Uint8Array(data.subarray(offset, offset + 100_000)));
      }
      await proc.stdin!.end();
      const got = await reading;
      checkEqual(got.stdout, new Uint8Array(data), 'what cat echoed');
    },
  }),
  defineCase({
    id: 'stdin.write-after-exit',
    title: 'writing after the command exited rejects with StdinClosed',
    requirements: ['SS-STDIN-1'],
    needs: ['stdin', 'streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['true'], { stdin: 'pipe' });
      await proc.wait();
      const error = await rejectionOf(proc.stdin!.write('too late'), 'write() after exit');
      checkErrorCode(error, 'STDIN_CLOSED', 'write() after exit');
      await proc.stdin!.end();
      await using ended = ctx.sandbox.stream(['cat'], { stdin: 'pipe' });
      await ended.stdin!.end();
      checkErrorCode(await rejectionOf(ended.stdin!.write('x'), 'write() after end()'), 'STDIN_CLOSED', 'write() after end()');
      check(ended.stdin!.closed, 'the writer does not report itself closed after end()');
    },
  }),
  defineCase({
    id: 'stdin.run-input',
    title: 'run() with input delivers the bytes, then end-of-file',
    requirements: ['SS-STDIN-2'],
    needs: ['stdin'],
    async run(ctx) {
      const result = await ctx.sandbox.run(['sh', '-c', 'cat; echo eof-seen >&2'], { input: ALL_BYTES });
      checkEqual(result.stdout, ALL_BYTES, 'what cat echoed');
      checkEqual(result.stderrText, 'eof-seen\n', 'stderr after end-of-file');
      const text = await ctx.sandbox.run(['cat'], { input: 'héllo' });
      checkEqual(text.stdoutText, 'héllo', 'string input, UTF-8 encoded');
      const ignored = await ctx.sandbox.run(['true'], { input: new Uint8Array(1 << 20) });
      check(ignored.exitCode === 0, 'a command that does not read its input should still succeed');
    },
  }),
  defineCase({
    id: 'stdin.exactly-once',
    title: 'bytes given to write() reach the command exactly once and in call order, however many writes are in flight',
    requirements: ['SS-STDIN-3'],
    needs: ['stdin', 'streaming'],
    timeoutMs: 30_000,
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['cat'], { stdin: 'pipe' });
      const reading = collect(proc);
      reading.catch(() => undefined);
      // Numbered records of varied sizes, all written without waiting for the previous one.
      const records = Array.from({ length: 3_000 }, (_, i) => `${i}:${'x'.repeat(i % 97)};`);
      const writes = records.map((record) => proc.stdin!.write(record));
      await Promise.all(writes);
      await proc.stdin!.end();
      const got = Buffer.from((await reading).stdout).toString();
      if (got !== records.join('')) {
        const seen = got.split(';').filter((r) => r !== '').map((r) => Number(r.split(':')[0]));
        const duplicated = seen.filter((n, i) => seen.indexOf(n) !== i);
        const missing = records.map((_, i) => i).filter((i) => !seen.includes(i));
        const outOfOrder = seen.findIndex((n, i) => i > 0 && n < seen[i - 1]!);
        throw new ConformanceFailure(
          `the command read ${seen.length} of ${records.length} records: ` +
            `${duplicated.length} duplicated (first ${duplicated.slice(0, 5).join(', ') || 'none'}), ` +
            `${missing.length} missing (first ${missing.slice(0, 5).join(', ') || 'none'}), ` +
            `${outOfOrder === -1 ? 'in order' : `out of order at position ${outOfOrder}`}`,
        );
      }
    },
  }),
  defineCase({
    id: 'stdin.none-is-eof',
    title: 'without stdin: "pipe" or input, the command\'s standard input is at end-of-file from the start, not an open pipe',
    requirements: ['SS-STDIN-4'],
    async run(ctx) {
      // A command that reads its standard input to the end: it ends at once on end-of-file, or hangs on an open pipe.
      const script = 'if read -r line; then echo "read: $line"; else echo eof; fi; cat; echo done';
      const timeout = await bound(ctx, 3_000);
      const result = await ctx.sandbox.run(['sh', '-c', script], { timeout });
      check(!result.timedOut, `run() without input: the command's read of standard input was still waiting ${timeout} ms later (an open pipe nobody writes)`);
      checkEqual(result.stdoutText, 'eof\ndone\n', 'what run() without input read from standard input');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', script], { timeout });
      const got = await collect(proc);
      const streamed = await proc.wait();
      check(!streamed.timedOut, `stream() without stdin: the command's read of standard input was still waiting ${timeout} ms later (an open pipe nobody writes)`);
      checkEqual(Buffer.from(got.stdout).toString(), 'eof\ndone\n', 'what stream() without stdin read from standard input');
    },
  }),
  defineCase({
    id: 'stdin.stopped-reading',
    title: 'a write() to a command that closed its standard input rejects with StdinClosed and does not hang',
    requirements: ['SS-STDIN-5'],
    needs: ['stdin', 'streaming'],
    async run(ctx) {
      // The command closes its standard input and runs on; nothing in it reads.
      await using proc = ctx.sandbox.stream(['sh', '-c', 'exec 0<&-; echo ready; while :; do sleep 0.05; done'], { stdin: 'pipe' });
      await untilReady(proc[Symbol.asyncIterator]());
      const within = await bound(ctx, 5_000);
      const block = new Uint8Array(64 * 1024);
      // Far more than any pipe holds: the writes must fail, not pile up.
      let error: unknown;
      for (let i = 0; i < 256 && error === undefined; i++) {
        const outcome = await settledWithin(proc.stdin!.write(block), within);
        if (outcome === 'pending') {
          throw new ConformanceFailure(`write() to a command that closed its standard input was still pending ${within} ms later: it hangs instead of rejecting with StdinClosed`);
        }
        if (outcome.rejected) error = outcome.reason;
      }
      check(error !== undefined, 'every write() to a command that closed its standard input resolved (16 MiB in all): the bytes went nowhere, and no StdinClosed came');
      checkErrorCode(error, 'STDIN_CLOSED', 'write() to a command that closed its standard input');
      check(!proc.exited, 'the command ended, so the case did not test a command that merely stopped reading');
      const again = await settledWithin(proc.stdin!.write('more'), within);
      check(again !== 'pending' && again.rejected && codeOf(again.reason) === 'STDIN_CLOSED', 'a later write() did not reject with StdinClosed too');
      await proc.stdin!.end();
    },
  }),
  defineCase({
    id: 'concurrency.separate',
    title: 'processes running at once stay separate: no chunk or exit status crosses between them',
    requirements: ['SS-CONC-1'],
    async run(ctx) {
      const count = 8;
      const procs = Array.from({ length: ctx.sandbox.capabilities.streaming ? count : 0 }, (_, i) =>
        ctx.sandbox.stream(['sh', '-c', `i=0; while [ $i -lt 300 ]; do echo token-${i}; i=$((i+1)); done; exit ${i + 10}`]),
      );
      try {
        const outputs = await Promise.all(procs.map((proc) => collect(proc)));
        for (const [i, got] of outputs.entries()) {
          const text = Buffer.from(got.stdout).toString();
          checkEqual(text, `token-${i}\n`.repeat(300), `the output of process ${i}`);
          const result = await procs[i]!.wait();
          check(result.exitCode === i + 10, `process ${i} reports exit ${result.exitCode}, expected ${i + 10}`);
        }
        check(new Set(procs.map((p) => p.id)).size === procs.length, 'two Processes share an id');
        const runs = await Promise.all(
          Array.from({ length: count }, (_, i) => ctx.sandbox.run(['sh', '-c', `printf run-${i}; exit ${i}`])),
        );
        runs.forEach((result, i) => {
          check(result.stdoutText === `run-${i}` && result.exitCode === i, `concurrent run ${i} got ${JSON.stringify(result.stdoutText)}/${result.exitCode}`);
        });
      } finally {
        await Promise.all(procs.map((proc) => proc[Symbol.asyncDispose]()));
      }
    },
  }),
  defineCase({
    id: 'limits.cpu',
    title: 'a command exceeding its CPU-time limit is stopped, under run() and stream(), and the result shows it',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    timeoutMs: 40_000,
    async run(ctx) {
      // One CPU second takes longer on a loaded machine: the timeout scales with the round trip.
      const timeout = await bound(ctx, 15_000);
      for (const { how, result } of await underBoth(ctx, ['sh', '-c', 'while :; do :; done'], { limits: { cpuSeconds: 1 }, timeout })) {
        check(!result.timedOut, `${how}: the CPU limit did not stop a busy loop before the ${timeout} ms timeout`);
        check(result.signal !== null || (result.exitCode ?? 0) !== 0, `${how}: a stopped command reports success (${result.exitCode}/${result.signal})`);
      }
    },
  }),
  defineCase({
    id: 'limits.address-space',
    title: 'a command exceeding its address-space limit fails, under run() and stream(), and the result shows it',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    timeoutMs: 30_000,
    async run(ctx) {
      // Doubles a string past 64 MiB: a few hundred MiB of memory at the peak.
      const argv = ['awk', 'BEGIN { s = "x"; while (length(s) < 50000000) s = s s; print length(s) }'];
      for (const { how, result } of await underBoth(ctx, argv, { limits: { addressSpaceBytes: 64 * 1024 * 1024 }, timeout: 20_000 })) {
        check(result.signal !== null || (result.exitCode ?? 0) !== 0, `${how}: a command needing far more than its 64 MiB address space reports success (${result.exitCode}/${result.signal})`);
      }
      const control = await ctx.sandbox.run(argv, { limits: { addressSpaceBytes: 4 * 1024 * 1024 * 1024 }, timeout: 20_000 });
      check(control.exitCode === 0, `the same command fails under a 4 GiB limit too (exit ${control.exitCode}/${control.signal}): ${control.stderrText}`);
    },
  }),
  defineCase({
    id: 'limits.file-size',
    title: 'a command exceeding its file-size limit is stopped or fails, under run() and stream(), and the result shows it',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    async run(ctx) {
      const dir = await scratch(ctx);
      for (const { how, result } of await underBoth(ctx, ['sh', '-c', 'head -c 100000 /dev/zero > "$1/big-$2"', 'sh', dir], { limits: { fileSizeBytes: 4096 } })) {
        check(result.signal !== null || (result.exitCode ?? 0) !== 0, `${how}: writing past the limit reports success (${result.exitCode}/${result.signal})`);
      }
      const sizes = await ctx.exec(['sh', '-c', 'for f in "$1"/big-*; do wc -c < "$f"; done; echo end', 'sh', dir]);
      const lines = sizes.stdoutText.trim().split(/\s+/);
      check(lines.pop() === 'end' && lines.length > 0 && lines.every((line) => /^[0-9]+$/.test(line)), `run() lost output of the helper that reads the file sizes: ${JSON.stringify(sizes.stdoutText)}`);
      for (const size of lines) check(Number(size) <= 4096, `a file grew to ${size} bytes past the 4096-byte limit`);
    },
  }),
  defineCase({
    id: 'limits.open-files',
    title: 'a command exceeding its open-files limit fails, under run() and stream(), and the result shows it',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    async run(ctx) {
      // paste holds every file open at once: 20 of them cannot fit in 8 descriptors.
      const argv = ['paste', ...Array.from({ length: 20 }, () => '/dev/null')];
      for (const { how, result } of await underBoth(ctx, argv, { limits: { openFiles: 8 } })) {
        check(result.exitCode !== 0 || result.signal !== null, `${how}: 20 files were opened under a limit of 8 descriptors (exit ${result.exitCode})`);
      }
      const control = await ctx.sandbox.run(argv, { limits: { openFiles: 64 } });
      check(control.exitCode === 0, `the same command fails under a generous limit too (exit ${control.exitCode}): ${control.stderrText}`);
    },
  }),
  defineCase({
    id: 'user.run-as',
    title: 'the user option runs the command as that account',
    requirements: ['SS-USER-1'],
    needs: ['user'],
    async run(ctx) {
      const expected = (await ctx.exec(['id', '-u', 'nobody'])).stdoutText.trim();
      check(/^[0-9]+$/.test(expected), 'the sandbox has no "nobody" account to run as');
      const result = await ctx.sandbox.run(['id', '-u'], { user: 'nobody' });
      checkEqual(result.stdoutText.trim(), expected, 'the uid the command ran as');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['id', '-u'], { user: 'nobody' });
      const got = await collect(proc);
      checkEqual(Buffer.from(got.stdout).toString().trim(), expected, 'the uid a streamed command ran as');
    },
  }),
];
