import type { OutputChunk } from '@sandstream/types';
import { checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { collect, printfFormat } from './support/collect.js';
import { copy, join } from './support/sequence.js';
import { checkSplitCharacter } from './support/text.js';

// Bytes the WHATWG decoder replaces: a lone continuation byte, a truncated sequence, an overlong form,
// a surrogate, a truncated 4-byte sequence at the very end; valid text around them.
const MIXED = new Uint8Array([
  ...Buffer.from('ok ñ € 🙂 '), 0xff, 0x20, 0xe2, 0x82, 0x20, 0xc0, 0xaf, 0x20, 0xed, 0xa0, 0x80, 0x20, 0x80, 0x80,
  ...Buffer.from(' end '), 0xf0, 0x9f, 0x98,
]);
const MIXED_AS_TEXT = new TextEncoder().encode(new TextDecoder('utf-8').decode(MIXED));

/** Output of a backend without binary-output: SS-TEXT-1. */
export const textOnlyCases = [
  defineCase({
    id: 'capabilities.absent-binary-output',
    title: '"output MUST be delivered as the UTF-8 encoding of what the WHATWG UTF-8 decoder makes of the bytes the command wrote": without binary-output, valid UTF-8 unchanged, each maximal invalid subpart U+FFFD, split characters reassembled',
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
];
