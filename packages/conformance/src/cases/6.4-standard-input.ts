import { hasCapability, type OutputChunk } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, codeOf, ConformanceFailure, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { ALL_BYTES, collect } from './support/collect.js';
import { bound, scratch, settledWithin } from './support/observe.js';
import { echoable, INPUT_BYTES } from './support/payload.js';
import { untilReady } from './support/tree.js';
import { collectAfterEof, ended, runAfterEof } from './support/after-eof.js';

/** Standard input: SS-STDIN-*. */
export const stdinCases = [
  defineCase({
    id: 'stdin.echo-and-eof',
    title: '"a writer whose writes arrive in call order and whose end() delivers end-of-file": a command that echoes what it reads',
    requirements: ['SS-STDIN-1'],
    needs: ['stdin', 'streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['sh', '-c', 'cat; echo eof-seen >&2'], { stdin: 'pipe' });
      check(proc.stdin !== null, 'stdin: "pipe" gave no writer');
      const expected = Array.from({ length: 200 }, (_, i) => `${i},`).join('');
      const end = ended();
      const reading = collectAfterEof(ctx, proc, end, expected.length, 'the command that echoes its input');
      reading.catch(() => undefined);
      const writes = Array.from({ length: 200 }, (_, i) => proc.stdin!.write(`${i},`));
      await Promise.all(writes);
      await proc.stdin.end();
      end.done();
      const got = await reading;
      checkEqual(Buffer.from(got.stdout).toString(), expected, 'what cat echoed');
      checkEqual(Buffer.from(got.stderr).toString(), 'eof-seen\n', 'what the command printed after end-of-file');
      check((await proc.wait()).exitCode === 0, 'the command did not exit 0 after end-of-file');
    },
  }),
  defineCase({
    id: 'stdin.large-input',
    title: '"a writer whose writes arrive in call order": several MiB written while output is read concurrently arrive intact, in writes larger than a pipe buffer and one larger than a request',
    requirements: ['SS-STDIN-1'],
    needs: ['stdin', 'streaming'],
    timeoutMs: 30_000,
    async run(ctx) {
      const data = echoable(ctx.sandbox, 6 * 1024 * 1024);
      await using proc = ctx.sandbox.stream(['cat'], { stdin: 'pipe' });
      const end = ended();
      const reading = collectAfterEof(ctx, proc, end, data.length, 'cat, given 6 MiB');
      reading.catch(() => undefined);
      // Writes of 100 000 bytes, each more than a pipe holds, so each waits for cat to read;
      // the fifth is 1.5 MiB, more than one request of a remote service.
      for (let offset = 0, n = 0; offset < data.length; n++) {
        const size = n === 4 ? 1_572_864 : 100_000;
        await proc.stdin!.write(new Uint8Array(data.subarray(offset, offset + size)));
        offset += size;
      }
      await proc.stdin!.end();
      end.done();
      const got = await reading;
      checkEqual(got.stdout, new Uint8Array(data), 'what cat echoed');
    },
  }),
  defineCase({
    id: 'stdin.write-after-exit',
    title: '"after the command exited, write() MUST reject with StdinClosed": a write to a command that ended',
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
    title: '"run(..., { input }) MUST deliver the bytes then end-of-file": and stream() with input, also input of many pipe buffers and more than one request',
    requirements: ['SS-STDIN-2'],
    needs: ['stdin'],
    async run(ctx) {
      // Every byte value first (where output is byte-exact), then enough to cross pipe buffers and request sizes.
      const binary = hasCapability(ctx.sandbox.capabilities, 'binary-output');
      const input = new Uint8Array(Buffer.concat([binary ? ALL_BYTES : new Uint8Array(0), echoable(ctx.sandbox, INPUT_BYTES)]));
      let echoedSoFar = 0;
      const onOutput = (chunk: OutputChunk): void => void (chunk.stream === 'stdout' && (echoedSoFar += chunk.data.byteLength));
      const running = ctx.sandbox.run(['sh', '-c', 'cat; echo eof-seen >&2'], { input, onOutput });
      const result = await runAfterEof(ctx, running, () => echoedSoFar, input.byteLength, 'run() with input, of a command that echoes it');
      checkEqual(result.stdout, input, `what cat echoed of ${input.byteLength} bytes of input`);
      checkEqual(result.stderrText, 'eof-seen\n', 'stderr after end-of-file');
      // Every byte value arrives, also where output cannot show them: counted in the sandbox.
      const all = await ctx.sandbox.run(['sh', '-c', 'wc -c'], { input: ALL_BYTES });
      checkEqual(all.stdoutText.trim(), '256', 'the byte count of all 256 byte values as input');
      const text = await ctx.sandbox.run(['cat'], { input: 'héllo' });
      checkEqual(text.stdoutText, 'héllo', 'string input, UTF-8 encoded');
      const ignored = await ctx.sandbox.run(['true'], { input: new Uint8Array(1 << 20) });
      check(ignored.exitCode === 0, 'a command that does not read its input should still succeed');
      // A fault the adapter raised meanwhile may have ended the case already (its signal aborted): start nothing after it.
      if (!ctx.sandbox.capabilities.streaming || ctx.signal.aborted) return;
      // Counted in the sandbox: stream() takes input too, and only the count comes back.
      const timeout = await bound(ctx, 10_000);
      await using proc = ctx.sandbox.stream(['wc', '-c'], { input, timeout });
      const streamed = await collect(proc);
      check(!(await proc.wait()).timedOut, `stream() with input: wc -c was still reading standard input ${timeout} ms later (no end-of-file after the input)`);
      checkEqual(Buffer.from(streamed.stdout).toString().trim(), String(input.byteLength), `stream() with input: the byte count the command read of ${input.byteLength} bytes`);
    },
  }),
  defineCase({
    id: 'stdin.exactly-once',
    title: '"the bytes given to write() MUST reach the command exactly once and in call order": however many writes are in flight',
    requirements: ['SS-STDIN-3'],
    needs: ['stdin', 'streaming'],
    timeoutMs: 30_000,
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['cat'], { stdin: 'pipe' });
      // Numbered records of varied sizes, all written without waiting for the previous one.
      const records = Array.from({ length: 3_000 }, (_, i) => `${i}:${'x'.repeat(i % 97)};`);
      const end = ended();
      const reading = collectAfterEof(ctx, proc, end, records.join('').length, 'cat, given 3000 records');
      reading.catch(() => undefined);
      const writes = records.map((record) => proc.stdin!.write(record));
      await Promise.all(writes);
      await proc.stdin!.end();
      end.done();
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
    title: '"the command\'s standard input MUST be at end-of-file from the start": without stdin: "pipe" or input, not an open pipe',
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
    title: '"MUST reject with StdinClosed and MUST NOT hang": a write() to a command that closed its standard input',
    requirements: ['SS-STDIN-5'],
    needs: ['stdin', 'streaming'],
    async run(ctx) {
      // The command closes its standard input and runs on; nothing in it reads.
      const dir = await scratch(ctx);
      await using proc = ctx.sandbox.stream(['sh', '-c', 'exec 0<&-; echo ready; : > "$1/printed"; while :; do sleep 0.05; done', 'sh', dir], { stdin: 'pipe' });
      await untilReady(proc[Symbol.asyncIterator](), { ctx, marker: `${dir}/printed` });
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
];
