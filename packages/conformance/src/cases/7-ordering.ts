import { type OutputChunk } from '@sandstream/types';
import { check, checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { collect } from './support/collect.js';
import { checkSequence, copy, join, SEQUENCE_SCRIPT } from './support/sequence.js';

/** Order and tagging of output: SS-ORDER-*. */
export const orderingCases = [
  defineCase({
    id: 'ordering.within-stream',
    title: '"Chunks of one stream MUST be delivered in the order the command wrote them, with no byte lost or duplicated": over many chunks',
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
    title: '"Every chunk MUST be tagged with the stream that produced it": interleaved writes to both streams, through onOutput and stream()',
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
];
