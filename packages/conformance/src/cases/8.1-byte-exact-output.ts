import { checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { ALL_BYTES, collect, printfFormat } from './support/collect.js';
import { checkSplitCharacter } from './support/text.js';


/** Output bytes: SS-BYTES-*. */
export const byteExactCases = [
  defineCase({
    id: 'bytes.all-values',
    title: '"all 256 byte values and invalid UTF-8 survive run() and stream()": on both streams, undecoded',
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
    title: '"text split across chunks MUST reassemble": a UTF-8 character the command writes in two parts reaches run(), onOutput and stream() intact',
    requirements: ['SS-BYTES-1'],
    needs: ['binary-output'],
    async run(ctx) {
      await checkSplitCharacter(ctx);
    },
  }),
  defineCase({
    id: 'bytes.final-line',
    title: '"Output that ends without a newline MUST be delivered in full, final chunk included": on both streams, under run() and stream()',
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
];
