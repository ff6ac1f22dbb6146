import type { RunOptions, StreamOptions } from '@sandstream/types';
import { check, rejectionOf, thrownBy } from '../assert.js';
import { defineCase } from '../case.js';
import { checkInvalid, label, type BadCall, type LooseRun, type LooseStream } from './support/invalid-calls.js';
import { readMarker, scratch } from './support/observe.js';
import { checkStrings, LARGE_STRING_BYTES, MANY_COUNT, manyTexts, randomText } from './support/payload.js';

// Arguments a shell would interpret, each of which must arrive as it is.
const HOSTILE = [
  'it\'s "quoted"',
  '$(touch pwned)',
  '`touch pwned`',
  'line one\nline two',
  '*',
  '?',
  '--help',
  '-n',
  '',
  ' spaced  out ',
  '$HOME ${PATH} $1',
  '; touch pwned | & > < \\',
  'héllo wörld ✓ 日本語 🙂',
  '\t\r\u0001',
];

const BAD_ARGV: BadCall[] = [
  { argv: [], key: 'argv' },
  { argv: 'echo hi', key: 'argv' },
  { argv: ['echo', 1], key: 'argv[1]' },
  { argv: [''], key: 'argv[0]' },
  { argv: ['echo', 'a\0b'], key: 'argv[1]' },
];

/** Malformed argv refused: SS-ARG-1. */
export const invalidArgvCases = [
  defineCase({
    id: 'arguments.invalid-argv',
    title: '"MUST be rejected with InvalidArgument whose key names the offending element, before any side effect": malformed argv given to run() and stream()',
    requirements: ['SS-ARG-1'],
    async run(ctx) {
      const run = ctx.sandbox.run.bind(ctx.sandbox) as LooseRun;
      const stream = ctx.sandbox.stream.bind(ctx.sandbox) as LooseStream;
      for (const call of BAD_ARGV) {
        checkInvalid(await rejectionOf(run(call.argv), `run${label(call)}`), call.key, `run${label(call)}`);
        // Without streaming, stream() refuses before it looks at its arguments.
        if (!ctx.sandbox.capabilities.streaming) continue;
        checkInvalid(thrownBy(() => stream(call.argv), `stream${label(call)}`), call.key, `stream${label(call)}`);
      }
    },
  }),
];

/** Each argument delivered as it is: SS-ARGV-1. */
export const argvDeliveryCases = [
  defineCase({
    id: 'arguments.argv-byte-exact',
    title: '"Each argv element MUST reach the command byte-exact as one argument, with no shell interpretation": also many of them and one larger than a pipe buffer',
    requirements: ['SS-ARGV-1'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const name = (args: readonly string[]) => (i: number): string =>
        `argument ${i + 1} (${args === HOSTILE ? JSON.stringify(args[i]) : `${Buffer.byteLength(args[i]!)} bytes`})`;
      const options: RunOptions = { cwd: dir };
      const result = await ctx.sandbox.run(['printf', '%s\\000', ...HOSTILE], options);
      check(result.exitCode === 0, `printf failed: ${result.stderrText}`);
      checkStrings(result.stdout, HOSTILE, name(HOSTILE), 'the arguments as the command received them');
      check((await readMarker(ctx, `${dir}/pwned`)) === undefined, 'an argument was interpreted by a shell');
      // Many small ones (about 40 KB in all), then one of 100 KB.
      const large = [...manyTexts(MANY_COUNT), randomText(LARGE_STRING_BYTES)];
      const many = await ctx.sandbox.run(['printf', '%s\\000', ...large]);
      check(many.exitCode === 0, `printf of ${large.length} arguments failed (exit ${many.exitCode}/${many.signal}): ${many.stderrText.trim().slice(0, 200)}`);
      checkStrings(many.stdout, large, name(large), `${large.length} arguments (${Buffer.byteLength(large.join(''))} bytes), as the command received them`);
      if (!ctx.sandbox.capabilities.streaming) return;
      // stream() starts commands as run() does; the hostile ones suffice there.
      const streamOptions: StreamOptions = { cwd: dir };
      await using proc = ctx.sandbox.stream(['printf', '%s\\000', ...HOSTILE], streamOptions);
      const parts: Uint8Array[] = [];
      for await (const chunk of proc) if (chunk.stream === 'stdout') parts.push(chunk.data);
      checkStrings(new Uint8Array(Buffer.concat(parts)), HOSTILE, name(HOSTILE), 'the arguments as a streamed command received them');
    },
  }),
];
