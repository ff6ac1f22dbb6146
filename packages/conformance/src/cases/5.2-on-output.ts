import { type ExecResult, type OutputChunk } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { throwingCallback } from '../testee/values.js';
import { seenInRun, signal } from './support/arrival.js';
import { bound, expectGoneNow, readPid, scratch } from './support/observe.js';
import { checkSequence, join, SEQUENCE_SCRIPT } from './support/sequence.js';

/** run()'s onOutput callback: SS-ONOUT-*. */
export const onOutputCases = [
  defineCase({
    id: 'output-cap.on-output-live',
    title: '"MUST deliver every chunk to the callback as it arrives, including chunks past the cap, in the order of arrival": the command waits for what only a live callback does',
    requirements: ['SS-ONOUT-1', 'SS-CAPOUT-1'],
    async run(ctx) {
      const dir = await scratch(ctx);
      // The command waits for a file the callback creates: only a live callback lets it finish.
      // It creates "printed" once it wrote its first line, so a callback held back is told from a slow start.
      const script = `echo first; : > "$1/printed"; while [ ! -f "$1/go" ]; do sleep 0.02; done; ${SEQUENCE_SCRIPT}; echo last`;
      const received: OutputChunk[] = [];
      const first = signal();
      const controller = new AbortController();
      let released = false;
      const running = ctx.sandbox.run(['sh', '-c', script, 'sh', dir], {
        maxOutputBytes: 10,
        timeout: await bound(ctx, 15_000),
        signal: controller.signal,
        onOutput: (chunk) => {
          received.push({ stream: chunk.stream, data: Uint8Array.from(chunk.data) });
          if (!released) {
            released = true;
            first.saw();
            ctx.exec(['touch', `${dir}/go`]).catch(() => undefined);
          }
        },
      });
      const got = (): string => Buffer.from(join(received, 'stdout')).toString('latin1');
      await seenInRun(running, first.promise, { ctx, marker: `${dir}/printed`, what: 'onOutput was not called while the command ran: its first line', got }, controller);
      const result = await running;
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
    title: '"When the onOutput callback throws, it MUST NOT be called again, the command MUST be terminated": and run() rejects with CallbackFailed carrying the cause and the output',
    requirements: ['SS-ONOUT-2'],
    async run(ctx) {
      const dir = await scratch(ctx);
      // The TERM handler writes once more: output after the failure must not reach the callback.
      // "printed", right after the first line, tells a callback held back from a slow start.
      const script = 'echo $$ > "$1/leader"; trap \'echo bye; exit 1\' TERM; echo one; : > "$1/printed"; while :; do sleep 0.05; done';
      const thrown = new Error('the callback failed');
      let calls = 0;
      const first = signal();
      const controller = new AbortController();
      // Long enough that only a command left running reaches it.
      const timeout = await bound(ctx, 3_000);
      const running = ctx.sandbox.run(['sh', '-c', script, 'sh', dir], {
        timeout,
        signal: controller.signal,
        // Marked as throwing, so that through a testee its stand-in throws at the adapter's call too (ADR-0038).
        onOutput: throwingCallback(() => {
          calls += 1;
          first.saw();
          throw thrown;
        }),
      });
      // An adapter that holds the line back is told so once the command printed it, not at the timeout.
      await seenInRun(running, first.promise, { ctx, marker: `${dir}/printed`, what: 'the line "one" (through run()\'s onOutput)', got: () => '' }, controller);
      const error = await rejectionOf(running, 'run() whose onOutput throws');
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
