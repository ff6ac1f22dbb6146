import { check, checkErrorCode, describeError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { expectGoneNow, expectNeverRan, readPid, scratch } from './support/observe.js';
import { seenInRun, signal } from './support/arrival.js';
import { expectTreeGone, startTree, treePrinted, untilReady, watchTree } from './support/tree.js';

const decoder = new TextDecoder();

/** A caller's AbortSignal: SS-TEAR-3. */
export const abortSignalCases = [
  defineCase({
    id: 'teardown.abort-stream',
    title: '"When the caller\'s AbortSignal fires, the command MUST be terminated": a streamed command and its tree; iteration and wait() reject with AbortError carrying the result',
    requirements: ['SS-TEAR-3', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      const controller = new AbortController();
      const tree = await startTree(ctx, { signal: controller.signal });
      const iterator = tree.proc[Symbol.asyncIterator]();
      await untilReady(iterator, treePrinted(ctx, tree));
      const processes = await watchTree(ctx, tree);
      controller.abort(new Error('caller gave up'));
      let error: unknown;
      try {
        for (;;) {
          const next = await iterator.next();
          if (next.done) break;
        }
      } catch (thrown) {
        error = thrown;
      }
      checkErrorCode(error, 'ABORTED', 'iteration after abort');
      const waited = await rejectionOf(tree.proc.wait(), 'wait() after abort');
      checkErrorCode(waited, 'ABORTED', 'wait() after abort');
      const result = (waited as { result?: { streamed?: unknown } }).result;
      check(result !== undefined && result.streamed === true, 'AbortError.result is missing or not a streamed result');
      // wait() is idempotent, rejections included.
      const again = await rejectionOf(tree.proc.wait(), 'a second wait() after abort');
      check(again === waited || (again instanceof Error && describeError(again) === describeError(waited)), `a second wait() after abort rejected differently: ${describeError(again)} after ${describeError(waited)}`);
      await expectTreeGone(ctx, tree, processes, 'when wait() rejected after abort');
      await tree.proc[Symbol.asyncDispose]();
    },
  }),
  defineCase({
    id: 'teardown.abort-run',
    title: '"run(), wait() and iteration MUST reject with AbortError carrying the partial result": aborting run() terminates the command and keeps the output before the abort',
    requirements: ['SS-TEAR-3'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const controller = new AbortController();
      // The command prints "partial" only once its pid is recorded.
      const script = 'echo $$ > "$1/leader"; echo partial; : > "$1/printed"; while :; do sleep 0.05; done';
      let seen = '';
      const partial = signal();
      const pending = ctx.sandbox.run(['sh', '-c', script, 'sh', dir], {
        signal: controller.signal,
        onOutput: (chunk) => {
          seen += decoder.decode(chunk.data);
          if (seen.includes('partial')) {
            partial.saw();
            controller.abort(new Error('enough'));
          }
        },
      });
      await seenInRun(pending, partial.promise, { ctx, marker: `${dir}/printed`, what: 'the line "partial" (through run()\'s onOutput)', got: () => seen }, controller);
      const error = await rejectionOf(pending, 'run() with an aborted signal');
      checkErrorCode(error, 'ABORTED', 'run() after abort');
      const result = (error as { result?: { stdout?: unknown; streamed?: unknown } }).result;
      check(result?.stdout instanceof Uint8Array, 'AbortError.result.stdout is missing');
      check(decoder.decode(result.stdout).includes('partial'), 'AbortError.result lost the output produced before the abort');
      check(result.streamed === false, 'the partial result of run() claims to be streamed');
      const leader = await readPid(ctx, `${dir}/leader`, 'the aborted command');
      await expectGoneNow(ctx, [{ pid: leader, role: 'the command itself' }], dir, 'when run() rejected after the abort');
    },
  }),
  defineCase({
    id: 'teardown.abort-before-start',
    title: '"an already-aborted signal MUST start nothing": neither run() nor stream()',
    requirements: ['SS-TEAR-3'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const signal = AbortSignal.abort(new Error('too late'));
      const touchArgv = (name: string): string[] => ['sh', '-c', 'touch "$1"', 'sh', `${dir}/${name}`];
      const checkNothingRan = (error: unknown, what: string): void => {
        checkErrorCode(error, 'ABORTED', what);
        check((error as { result?: unknown }).result === undefined, `${what}: AbortError carries a result, but nothing ran`);
      };
      checkNothingRan(await rejectionOf(ctx.sandbox.run(touchArgv('run'), { signal }), 'run()'), 'run() with an aborted signal');
      // A later run() without the signal must leave its marker: then the refused one had as long to act.
      await expectNeverRan(ctx, `${dir}/run`, 'run() with an already-aborted signal started the command', {
        path: `${dir}/later-run`,
        run: () => ctx.sandbox.run(touchArgv('later-run')),
      });
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(touchArgv('stream'), { signal });
      checkNothingRan(await rejectionOf(proc.wait(), 'wait()'), 'wait() of a stream() given an aborted signal');
      await expectNeverRan(ctx, `${dir}/stream`, 'stream() with an already-aborted signal started the command', {
        path: `${dir}/later-stream`,
        run: async () => {
          await using later = ctx.sandbox.stream(touchArgv('later-stream'));
          await later.wait();
        },
      });
    },
  }),
];
