import { encodeExecResult, type ExecResult, type OutputChunk } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, codeOf, ConformanceFailure, describeError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { ALL_BYTES, collect, printfFormat } from './collect.js';
import { checkSplitCharacter } from './support/text.js';
import { bound, expectGoneNow, readMarker, readPid, scratch, settledWithin } from './support/observe.js';

function copy(chunk: OutputChunk): OutputChunk {
  return { stream: chunk.stream, data: Uint8Array.from(chunk.data) };
}

function join(chunks: readonly OutputChunk[], stream: 'stdout' | 'stderr'): Uint8Array {
  return new Uint8Array(Buffer.concat(chunks.filter((c) => c.stream === stream).map((c) => c.data)));
}

const COUNT = 20_000;
// 1..20000, one per line: 108894 bytes, every prefix distinct from every other part.
const NUMBERED_SCRIPT = `awk 'BEGIN { for (i = 1; i <= ${COUNT}; i++) print i }'`;
const NUMBERED = Array.from({ length: COUNT }, (_, i) => `${i + 1}\n`).join('');
// Interleaves sequence numbers on both streams, flushing often so the
// output arrives in many chunks.
const SEQUENCE_SCRIPT = `awk 'BEGIN { for (i = 1; i <= ${COUNT}; i++) { print i; print i > "/dev/stderr"; if (i % 97 == 0) { fflush(); system("") } } }'`;

// Bytes the WHATWG decoder replaces: a lone continuation byte, a truncated sequence, an overlong form,
// a surrogate, a truncated 4-byte sequence at the very end; valid text around them.
const MIXED = new Uint8Array([
  ...Buffer.from('ok ñ € 🙂 '), 0xff, 0x20, 0xe2, 0x82, 0x20, 0xc0, 0xaf, 0x20, 0xed, 0xa0, 0x80, 0x20, 0x80, 0x80,
  ...Buffer.from(' end '), 0xf0, 0x9f, 0x98,
]);
const MIXED_AS_TEXT = new TextEncoder().encode(new TextDecoder('utf-8').decode(MIXED));

const FLOW_LINES = 1_600_000;
// 16 MiB of numbered 10-byte lines; every 100000 lines the count written so far goes to "progress".
const FLOW_SCRIPT = `awk -v p="$1/progress" 'BEGIN { for (i = 1; i <= ${FLOW_LINES}; i++) { printf "%09d\\n", i; if (i % 100000 == 0) { print i > p; close(p) } } }'`;

function checkFlow(stdout: Uint8Array): void {
  const expected = Buffer.from(Array.from({ length: FLOW_LINES }, (_, i) => `${String(i + 1).padStart(9, '0')}\n`).join(''));
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

function checkSequence(bytes: Uint8Array, what: string): void {
  const text = Buffer.from(bytes).toString('latin1');
  const numbers = text.split('\n');
  check(numbers.pop() === '', `${what} does not end with a newline`);
  check(numbers.length === COUNT, `${what} has ${numbers.length} lines, expected ${COUNT}: output was lost or duplicated`);
  for (let i = 0; i < COUNT; i++) {
    if (numbers[i] !== String(i + 1)) {
      throw new ConformanceFailure(`${what}: line ${i + 1} is ${JSON.stringify(numbers[i])}, expected ${i + 1}: out of order`);
    }
  }
}

export const outputCases = [
  defineCase({
    id: 'ordering.within-stream',
    title: 'chunks of each stream arrive in the order written, with nothing lost or duplicated, over many chunks',
    requirements: ['SS-ORDER-1'],
    // Hundreds of flushes, each forking a shell: slow on a loaded machine.
    timeoutMs: 60_000,
    async run(ctx) {
      const live: OutputChunk[] = [];
      const result = await ctx.sandbox.run(['sh', '-c', SEQUENCE_SCRIPT], { onOutput: (chunk) => live.push(copy(chunk)) });
      checkSequence(result.stdout, 'run() stdout');
      checkSequence(result.stderr, 'run() stderr');
      check(live.length > 2, `the output arrived in only ${live.length} chunk(s); the case needs many`);
      checkSequence(join(live, 'stdout'), 'stdout as onOutput received it');
      checkSequence(join(live, 'stderr'), 'stderr as onOutput received it');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', SEQUENCE_SCRIPT]);
      const got = await collect(proc);
      check(got.chunks.length > 2, `the streamed output arrived in only ${got.chunks.length} chunk(s); the case needs many`);
      checkSequence(got.stdout, 'streamed stdout');
      checkSequence(got.stderr, 'streamed stderr');
    },
  }),
  defineCase({
    id: 'ordering.tagging',
    title: 'every chunk is tagged with the stream that produced it',
    requirements: ['SS-ORDER-2'],
    async run(ctx) {
      const script = `awk 'BEGIN { for (i = 1; i <= 5000; i++) { printf "o"; printf "e" > "/dev/stderr"; if (i % 50 == 0) { fflush(); system("") } } }'`;
      const checkTags = (chunks: readonly OutputChunk[], how: string): void => {
        for (const chunk of chunks) {
          const text = Buffer.from(chunk.data).toString('latin1');
          const foreign = chunk.stream === 'stdout' ? 'e' : 'o';
          check(!text.includes(foreign), `${how}: a ${chunk.stream} chunk contains bytes of the other stream: ${JSON.stringify(text.slice(0, 40))}`);
        }
      };
      const live: OutputChunk[] = [];
      const result = await ctx.sandbox.run(['sh', '-c', script], { onOutput: (chunk) => live.push(copy(chunk)) });
      checkEqual(result.stdout, new Uint8Array(5000).fill(0x6f), 'run() stdout');
      checkEqual(result.stderr, new Uint8Array(5000).fill(0x65), 'run() stderr');
      checkTags(live, 'onOutput');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', script]);
      const got = await collect(proc);
      checkTags(got.chunks, 'stream()');
      check(got.stdout.byteLength === 5000 && got.stderr.byteLength === 5000, `expected 5000 bytes on each stream, got ${got.stdout.byteLength}/${got.stderr.byteLength}`);
    },
  }),
  defineCase({
    id: 'bytes.all-values',
    title: 'all 256 byte values survive run() and stream() on both streams, undecoded',
    requirements: ['SS-BYTES-1'],
    needs: ['binary-output'],
    async run(ctx) {
      const format = printfFormat(ALL_BYTES);
      const script = 'printf "$1"; printf "$1" >&2';
      const result = await ctx.sandbox.run(['sh', '-c', script, 'sh', format]);
      checkEqual(result.stdout, ALL_BYTES, 'run() stdout');
      checkEqual(result.stderr, ALL_BYTES, 'run() stderr');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', format]);
      const got = await collect(proc);
      checkEqual(got.stdout, ALL_BYTES, 'streamed stdout');
      checkEqual(got.stderr, ALL_BYTES, 'streamed stderr');
    },
  }),
  defineCase({
    id: 'bytes.utf8-split',
    title: 'a UTF-8 character the command writes in two parts reaches run(), onOutput and stream() intact',
    requirements: ['SS-BYTES-1'],
    needs: ['binary-output'],
    async run(ctx) {
      await checkSplitCharacter(ctx);
    },
  }),
  defineCase({
    id: 'capabilities.absent-binary-output',
    title: 'without binary-output, output is text: valid UTF-8 unchanged, each maximal invalid subpart replaced by U+FFFD as the WHATWG decoder does, split characters reassembled',
    requirements: ['SS-TEXT-1'],
    without: 'binary-output',
    async run(ctx) {
      const format = printfFormat(MIXED);
      const script = 'printf "$1"; printf "$1" >&2';
      const live: OutputChunk[] = [];
      const result = await ctx.sandbox.run(['sh', '-c', script, 'sh', format], { onOutput: (chunk) => live.push(copy(chunk)) });
      checkEqual(result.stdout, MIXED_AS_TEXT, 'run() stdout (as the WHATWG decoder reads it, encoded again)');
      checkEqual(result.stderr, MIXED_AS_TEXT, 'run() stderr (as the WHATWG decoder reads it, encoded again)');
      checkEqual(join(live, 'stdout'), MIXED_AS_TEXT, 'stdout as onOutput received it');
      if (ctx.sandbox.capabilities.streaming) {
        await using proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', format]);
        const got = await collect(proc);
        checkEqual(got.stdout, MIXED_AS_TEXT, 'streamed stdout (as the WHATWG decoder reads it, encoded again)');
        checkEqual(got.stderr, MIXED_AS_TEXT, 'streamed stderr (as the WHATWG decoder reads it, encoded again)');
      }
      await checkSplitCharacter(ctx);
    },
  }),
  defineCase({
    id: 'bytes.final-line',
    title: 'output that ends without a newline is delivered in full',
    requirements: ['SS-BYTES-2'],
    async run(ctx) {
      const script = 'printf "first\\nno newline"; printf "err tail" >&2';
      const result = await ctx.sandbox.run(['sh', '-c', script]);
      checkEqual(result.stdoutText, 'first\nno newline', 'run() stdout');
      checkEqual(result.stderrText, 'err tail', 'run() stderr');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', script]);
      const got = await collect(proc);
      checkEqual(Buffer.from(got.stdout).toString(), 'first\nno newline', 'streamed stdout');
      checkEqual(Buffer.from(got.stderr).toString(), 'err tail', 'streamed stderr');
    },
  }),
  defineCase({
    id: 'wait.idempotent',
    title: 'wait() is idempotent and resolves with a streamed result',
    requirements: ['SS-WAIT-1'],
    needs: ['streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['sh', '-c', 'echo hi; exit 3']);
      await collect(proc);
      const [a, b] = await Promise.all([proc.wait(), proc.wait()]);
      const c = await proc.wait();
      check(a.exitCode === 3, `wait() reports exit code ${a.exitCode}, expected 3`);
      checkEqual(encodeExecResult(b), encodeExecResult(a), 'a second wait()');
      checkEqual(encodeExecResult(c), encodeExecResult(a), 'a later wait()');
      check(a.streamed, 'wait() resolved with streamed: false');
    },
  }),
  defineCase({
    id: 'wait.idempotent-rejection',
    title: 'a wait() that rejects rejects again, with the same error, on every later call',
    requirements: ['SS-WAIT-1'],
    needs: ['streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['/nonexistent/sandstream-no-such-command']);
      const first = await rejectionOf(proc.wait(), 'wait() of a command that cannot start');
      checkErrorCode(first, 'SPAWN_FAILED', 'wait() of a command that cannot start');
      const [second, third] = await Promise.all([
        rejectionOf(proc.wait(), 'a second wait()'),
        rejectionOf(proc.wait(), 'a third wait()'),
      ]);
      for (const [again, what] of [[second, 'a second wait()'], [third, 'a third wait()']] as const) {
        checkErrorCode(again, 'SPAWN_FAILED', what);
        checkEqual(describeError(again), describeError(first), `${what} after a rejection`);
      }
    },
  }),
  defineCase({
    id: 'wait.reader-keeps-output',
    title: 'while one task awaits wait(), a loop that is reading receives every chunk: a write, reply, write, reply exchange with stderr flowing',
    requirements: ['SS-WAIT-3'],
    needs: ['streaming', 'stdin'],
    async run(ctx) {
      // A line-oriented server, as an stdio MCP server is: a reply on stdout and a log line on stderr per request.
      const script = 'while IFS= read -r line; do echo "log $line" >&2; echo "reply $line"; done; echo bye >&2; echo end';
      const within = await bound(ctx, 5_000);
      await using proc = ctx.sandbox.stream(['sh', '-c', script], { stdin: 'pipe' });
      // The loop is reading (waiting for its first chunk) when the other task calls wait().
      const iterator = proc[Symbol.asyncIterator]();
      const ask = (): Promise<IteratorResult<OutputChunk, undefined>> => {
        const next = iterator.next();
        next.catch(() => undefined);
        return next;
      };
      let pending = ask();
      const waiting = proc.wait();
      waiting.catch(() => undefined);
      const seen = { stdout: '', stderr: '' };
      const readUntil = async (done: () => boolean, what: string): Promise<void> => {
        while (!done()) {
          const next = await settledWithin(pending, within);
          if (next !== 'pending' && !next.rejected && next.value.done !== true) pending = ask();
          if (next === 'pending') throw new ConformanceFailure(`${what}: nothing arrived within ${within} ms while another task awaited wait() (stdout so far ${JSON.stringify(seen.stdout.slice(-60))})`);
          if (next.rejected) throw new ConformanceFailure(`${what}: the loop failed with ${describeError(next.reason)}`);
          if (next.value.done) throw new ConformanceFailure(`${what}: the loop ended early while another task awaited wait() (stdout so far ${JSON.stringify(seen.stdout.slice(-60))})`);
          seen[next.value.value.stream] += Buffer.from(next.value.value.data).toString();
        }
      };
      const count = 20;
      for (let i = 1; i <= count; i++) {
        await proc.stdin!.write(`request ${i}\n`);
        await readUntil(() => seen.stdout.includes(`reply request ${i}\n`), `the reply to request ${i}`);
      }
      await proc.stdin!.end();
      await readUntil(() => seen.stdout.endsWith('end\n') && seen.stderr.endsWith('bye\n'), 'the rest of the output after end-of-file');
      const last = await settledWithin(pending, within);
      check(last !== 'pending' && !last.rejected && last.value.done === true, 'the loop did not end after the last chunk');
      const lines = (prefix: string): string => Array.from({ length: count }, (_, i) => `${prefix} request ${i + 1}\n`).join('');
      checkEqual(seen.stdout, `${lines('reply')}end\n`, 'stdout the loop received');
      checkEqual(seen.stderr, `${lines('log')}bye\n`, 'stderr the loop received');
      const result = await waiting;
      check(result.exitCode === 0, `wait() reports ${result.exitCode}/${result.signal}, expected exit code 0`);
    },
  }),
  defineCase({
    id: 'flow.unread-beyond-high-water',
    title: 'output left unread beyond the high-water mark is delivered in full and in order once read',
    requirements: ['SS-FLOW-1'],
    needs: ['streaming'],
    runsAlone: 'it moves 16 MiB while holding it unread, which would starve the timing checks of cases beside it',
    timeoutMs: 60_000,
    async run(ctx) {
      const dir = await scratch(ctx);
      await using proc = ctx.sandbox.stream(['sh', '-c', FLOW_SCRIPT, 'sh', dir]);
      // Nothing is read until the command has written all of it or is held back (its progress stands still).
      const step = await bound(ctx, 200);
      const deadline = performance.now() + (await bound(ctx, 15_000));
      let previous = -1;
      for (;;) {
        const progress = Number((await readMarker(ctx, `${dir}/progress`))?.trim() ?? '0');
        if (progress >= FLOW_LINES || (progress === previous && progress > 0) || performance.now() > deadline) break;
        previous = progress;
        await ctx.sleep(step);
      }
      const got = await collect(proc);
      const result = await proc.wait();
      check(result.exitCode === 0, `the command reports ${result.exitCode}/${result.signal}`);
      checkFlow(got.stdout);
    },
  }),
  defineCase({
    id: 'wait.drains-unread',
    title: 'wait() with much unread output drains and discards it without hanging',
    requirements: ['SS-WAIT-2'],
    needs: ['streaming'],
    timeoutMs: 30_000,
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['sh', '-c', 'head -c 33554432 /dev/zero; head -c 8388608 /dev/zero >&2; exit 4']);
      const result = await proc.wait();
      check(result.exitCode === 4, `wait() reports ${result.exitCode}/${result.signal}, expected exit code 4`);
      check(!result.timedOut, 'the command timed out');
      // What wait() discarded is gone: a later loop ends at once (or is refused as InvalidState), and gets nothing.
      let chunks = 0;
      try {
        for await (const chunk of proc) chunks += chunk.data.byteLength > 0 ? 1 : 0;
      } catch (error) {
        if (codeOf(error) !== 'INVALID_STATE') {
          throw new ConformanceFailure(`iterating after wait() must end or raise InvalidState; it failed with ${describeError(error)}`);
        }
      }
      check(chunks === 0, `output discarded by wait() was delivered afterwards (${chunks} chunks)`);
    },
  }),
  defineCase({
    id: 'result.streamed-flag',
    title: 'stream() results have streamed: true and empty output; run() results have streamed: false and the output',
    requirements: ['SS-RESULT-1'],
    async run(ctx) {
      const ran = await ctx.sandbox.run(['sh', '-c', 'echo out; echo err >&2']);
      check(ran.streamed === false, 'a run() result has streamed: true');
      checkEqual(ran.stdoutText, 'out\n', 'run() stdout');
      checkEqual(ran.stderrText, 'err\n', 'run() stderr');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', 'echo out; echo err >&2']);
      await collect(proc);
      const streamed = await proc.wait();
      check(streamed.streamed === true, 'a stream() result has streamed: false');
      check(streamed.stdout.byteLength === 0 && streamed.stderr.byteLength === 0, 'a stream() result carries output');
    },
  }),
  defineCase({
    id: 'result.exit-codes',
    title: 'exit codes 0, 1 and 255 are reported with a null signal; death by a signal is exitCode null with its name',
    requirements: ['SS-RESULT-2'],
    async run(ctx) {
      for (const code of [0, 1, 255]) {
        const result = await ctx.sandbox.run(['sh', '-c', `exit ${code}`]);
        check(result.exitCode === code && result.signal === null, `exit ${code} reported as ${result.exitCode}/${result.signal}`);
        if (!ctx.sandbox.capabilities.streaming) continue;
        await using proc = ctx.sandbox.stream(['sh', '-c', `exit ${code}`]);
        const waited = await proc.wait();
        check(waited.exitCode === code && waited.signal === null, `streamed exit ${code} reported as ${waited.exitCode}/${waited.signal}`);
      }
      for (const signal of ['KILL', 'TERM', 'INT']) {
        const result = await ctx.sandbox.run(['sh', '-c', `kill -${signal} $$`]);
        check(result.exitCode === null && result.signal === `SIG${signal}`, `death by SIG${signal} reported as ${result.exitCode}/${result.signal}`);
      }
    },
  }),
  defineCase({
    id: 'result.schema',
    title: 'every result validates against the ExecResult schema once encoded',
    requirements: ['SS-RESULT-3'],
    async run(ctx) {
      const { validatorFor } = await import('@sandstream/types');
      const validate = validatorFor('ExecResult');
      const results: ExecResult[] = [
        await ctx.sandbox.run(['sh', '-c', 'echo out; echo err >&2; exit 2']),
        await ctx.sandbox.run(['sh', '-c', 'kill -KILL $$']),
        await ctx.sandbox.run(['sleep', '5'], { timeout: 200 }),
        await ctx.sandbox.run(['head', '-c', '5000', '/dev/zero'], { maxOutputBytes: 10 }),
      ];
      if (ctx.sandbox.capabilities.streaming) {
        await using proc = ctx.sandbox.stream(['echo', 'x']);
        results.push(await proc.wait());
      }
      for (const result of results) {
        let encoded: unknown;
        try {
          encoded = encodeExecResult(result);
        } catch (error) {
          check(false, `a result could not be encoded: ${(error as Error).message}`);
        }
        check(validate(encoded), `a result does not match the schema: ${validate.issues.map((i) => `${i.instancePath || '/'} ${i.message}`).join('; ')}`);
      }
    },
  }),
  defineCase({
    id: 'output-cap.truncation',
    title: 'run() keeps at most maxOutputBytes per stream, flags truncation per stream, and keeps draining the command',
    requirements: ['SS-CAPOUT-1'],
    timeoutMs: 30_000,
    async run(ctx) {
      // Distinct bytes (numbered lines), so what is kept shows which part it is.
      const result = await ctx.sandbox.run(['sh', '-c', `${NUMBERED_SCRIPT}; printf tiny >&2`], { maxOutputBytes: 1000 });
      check(result.stdout.byteLength === 1000, `stdout kept ${result.stdout.byteLength} bytes under a 1000-byte cap`);
      checkEqual(Buffer.from(result.stdout).toString('latin1'), NUMBERED.slice(0, 1000), 'the capped stdout (the first 1000 bytes written)');
      check(result.stdoutTruncated === true, 'stdoutTruncated is false although stdout exceeded the cap');
      checkEqual(result.stderrText, 'tiny', 'stderr under the cap');
      check(result.stderrTruncated === false, 'stderrTruncated is true although stderr stayed under the cap');
      // 16 MiB, far past any pipe buffer: the command finishes only if it is drained.
      const big = await ctx.sandbox.run(['head', '-c', '16777216', '/dev/zero'], { maxOutputBytes: 1024, timeout: await bound(ctx, 20_000) });
      check(!big.timedOut && big.exitCode === 0, `a command writing past the cap was not drained (exit ${big.exitCode}/${big.signal}, timedOut ${big.timedOut})`);
      check(big.stdout.byteLength === 1024 && big.stdoutTruncated, 'the capped result is wrong');
      const exact = await ctx.sandbox.run(['head', '-c', '1000', '/dev/zero'], { maxOutputBytes: 1000 });
      check(exact.stdout.byteLength === 1000 && !exact.stdoutTruncated, 'output of exactly the cap is flagged as truncated or cut');
    },
  }),
  defineCase({
    id: 'output-cap.on-output-live',
    title: 'onOutput receives every chunk live, including those past the cap, in arrival order',
    requirements: ['SS-ONOUT-1', 'SS-CAPOUT-1'],
    async run(ctx) {
      const dir = await scratch(ctx);
      // The command waits for a file the callback creates: only a live callback lets it finish.
      const script = `echo first; while [ ! -f "$1/go" ]; do sleep 0.02; done; ${SEQUENCE_SCRIPT}; echo last`;
      const received: OutputChunk[] = [];
      let released = false;
      const result = await ctx.sandbox.run(['sh', '-c', script, 'sh', dir], {
        maxOutputBytes: 10,
        timeout: await bound(ctx, 15_000),
        onOutput: (chunk) => {
          received.push({ stream: chunk.stream, data: Uint8Array.from(chunk.data) });
          if (!released) {
            released = true;
            ctx.exec(['touch', `${dir}/go`]).catch(() => undefined);
          }
        },
      });
      check(!result.timedOut, 'onOutput was not called while the command ran (it waited for the callback until the timeout)');
      const stdout = Buffer.from(join(received, 'stdout')).toString('latin1');
      check(stdout.startsWith('first\n') && stdout.endsWith('last\n'), 'onOutput missed the first or the last line');
      checkSequence(new Uint8Array(Buffer.from(stdout.slice('first\n'.length, -'last\n'.length), 'latin1')), 'stdout as onOutput received it');
      checkSequence(join(received, 'stderr'), 'stderr as onOutput received it');
      check(result.stdout.byteLength === 10 && result.stdoutTruncated, 'the buffered result ignored the cap');
    },
  }),
  defineCase({
    id: 'output-cap.on-output-throws',
    title: 'an onOutput callback that throws is not called again; the command is terminated and run() rejects with CallbackFailed',
    requirements: ['SS-ONOUT-2'],
    async run(ctx) {
      const dir = await scratch(ctx);
      // The TERM handler writes once more: output after the failure must not reach the callback.
      const script = 'echo $$ > "$1/leader"; trap \'echo bye; exit 1\' TERM; echo one; while :; do sleep 0.05; done';
      const thrown = new Error('the callback failed');
      let calls = 0;
      // Long enough that only a command left running reaches it.
      const timeout = await bound(ctx, 3_000);
      const error = await rejectionOf(
        ctx.sandbox.run(['sh', '-c', script, 'sh', dir], {
          timeout,
          onOutput: () => {
            calls += 1;
            throw thrown;
          },
        }),
        'run() whose onOutput throws',
      );
      checkErrorCode(error, 'CALLBACK_FAILED', 'run() whose onOutput throws');
      check((error as { cause?: unknown }).cause === thrown, 'CallbackFailed.cause is not what the callback threw');
      check(calls === 1, `the callback was called ${calls} times; after it threw it must not be called again`);
      const result = (error as { result?: ExecResult }).result;
      check(result?.stdout instanceof Uint8Array, 'CallbackFailed carries no result');
      checkEqual(Buffer.from(result.stdout).toString(), 'one\nbye\n', 'CallbackFailed.result.stdout (everything until the command was gone)');
      check(result.timedOut === false, 'the command ran on until the timeout: it was not terminated');
      const leader = await readPid(ctx, `${dir}/leader`, 'the command');
      await expectGoneNow(ctx, [{ pid: leader, role: 'the command itself' }], dir, 'when run() rejected after the callback threw');
    },
  }),
];
