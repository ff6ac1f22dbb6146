import { encodeExecResult, type OutputChunk } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, codeOf, ConformanceFailure, describeError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { arrivalOf } from './support/arrival.js';
import { collect } from './support/collect.js';
import type { CaseContext } from '../context.js';
import { bound, readMarker, scratch, settledWithin } from './support/observe.js';
import { Progress } from './support/progress.js';

// 32 MiB on stdout then 8 MiB on stderr, in pieces of 1 MiB, the count so far in "progress" after each.
const DRAIN_SCRIPT = [
  'i=0; while [ $i -lt 32 ]; do head -c 1048576 /dev/zero; i=$((i+1)); echo $i > "$1/progress"; done',
  'while [ $i -lt 40 ]; do head -c 1048576 /dev/zero >&2; i=$((i+1)); echo $i > "$1/progress"; done',
  'exit 4',
].join('\n');

/**
 * `waiting` (a wait() with output unread), failing once the command's
 * progress stands still while it is pending: nothing drains the output, and
 * the command waits on a full pipe. Still means several times the longest
 * the progress took to advance, and at least a measured bound, so a slow
 * sandbox is never taken for a stuck one.
 */
async function drained<T>(ctx: CaseContext, waiting: Promise<T>, dir: string): Promise<T> {
  const step = await bound(ctx, 100);
  const still = await bound(ctx, 1_000);
  const watch = new Progress();
  for (;;) {
    const outcome = await settledWithin(waiting, step);
    if (outcome !== 'pending') {
      if (outcome.rejected) throw outcome.reason;
      return outcome.value;
    }
    const progress = Number((await readMarker(ctx, `${dir}/progress`))?.trim() ?? '0');
    const stillFor = watch.see(progress);
    if (watch.stuck(stillFor, still)) {
      throw new ConformanceFailure(
        `wait() did not drain the unread output: while it was pending, the command stood still for ${Math.round(stillFor)} ms ` +
          `with ${progress} of its 40 MiB written (it waits on a full pipe), and wait() had not settled`,
      );
    }
  }
}

/** Process.wait(): SS-WAIT-*. */
export const waitCases = [
  defineCase({
    id: 'wait.idempotent',
    title: '"wait() MUST be idempotent: every call resolves with an equal ExecResult (streamed: true)": calls at once and later',
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
    title: '"wait() MUST be idempotent": a wait() that rejects rejects again, with the same error, on every later call',
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
    title: '"While a loop is iterating the Process, wait() MUST NOT take output from it": a write, reply, write, reply exchange with stderr flowing while another task awaits wait()',
    requirements: ['SS-WAIT-3'],
    needs: ['streaming', 'stdin'],
    async run(ctx) {
      // A line-oriented server, as an stdio MCP server is: a reply on stdout and a log line on stderr per request.
      // After the n-th reply it creates "replied-n", so a reply held back is told from a slow server.
      const dir = await scratch(ctx);
      const script = 'n=0; while IFS= read -r line; do n=$((n+1)); echo "log $line" >&2; echo "reply $line"; : > "$1/replied-$n"; done; echo bye >&2; echo end';
      const within = await bound(ctx, 5_000);
      await using proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir], { stdin: 'pipe' });
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
        const what = `the reply to request ${i}`;
        await arrivalOf(readUntil(() => seen.stdout.includes(`reply request ${i}\n`), what), { ctx, marker: `${dir}/replied-${i}`, what: `${what}, while another task awaited wait(),`, got: () => seen.stdout });
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
    id: 'wait.drains-unread',
    title: '"wait() called with output still unread MUST drain and discard it and MUST NOT hang": with much unread output',
    requirements: ['SS-WAIT-2'],
    needs: ['streaming'],
    timeoutMs: 30_000,
    async run(ctx) {
      const dir = await scratch(ctx);
      await using proc = ctx.sandbox.stream(['sh', '-c', DRAIN_SCRIPT, 'sh', dir]);
      const result = await drained(ctx, proc.wait(), dir);
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
];
