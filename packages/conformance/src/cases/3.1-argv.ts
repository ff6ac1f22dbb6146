import type { RunOptions, StreamOptions } from '@sandstream/types';
import { check, checkErrorCode, ConformanceFailure, describeError, rejectionOf, thrownBy } from '../assert.js';
import { defineCase } from '../case.js';
import { expectNeverRan, readMarker, scratch } from './support/observe.js';
import { checkStrings, LARGE_STRING_BYTES, MANY_COUNT, manyTexts, randomText } from './support/payload.js';

interface BadCall {
  readonly argv: unknown;
  readonly options?: unknown;
  readonly key: string;
}

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

const BAD_COMMON: BadCall[] = [
  { argv: ['true'], options: { nonsense: 1 }, key: 'options.nonsense' },
  { argv: ['true'], options: { timeout: 0 }, key: 'options.timeout' },
  { argv: ['true'], options: { timeout: -5 }, key: 'options.timeout' },
  { argv: ['true'], options: { timeout: '100' }, key: 'options.timeout' },
  { argv: ['true'], options: { timeout: Number.NaN }, key: 'options.timeout' },
  { argv: ['true'], options: { env: { SANDSTREAM_X: 1 } }, key: 'options.env.SANDSTREAM_X' },
  { argv: ['true'], options: { cwd: 42 }, key: 'options.cwd' },
  { argv: ['true'], options: { signal: 'stop' }, key: 'options.signal' },
  { argv: ['true'], options: 'fast', key: 'options' },
];

const BAD_RUN: BadCall[] = [
  { argv: ['true'], options: { maxOutputBytes: -1 }, key: 'options.maxOutputBytes' },
  { argv: ['true'], options: { onOutput: 'log' }, key: 'options.onOutput' },
  { argv: ['true'], options: { stdin: 'pipe' }, key: 'options.stdin' },
];

const BAD_STREAM: BadCall[] = [
  { argv: ['true'], options: { stdin: 'inherit' }, key: 'options.stdin' },
  { argv: ['true'], options: { maxOutputBytes: 10 }, key: 'options.maxOutputBytes' },
];

function checkInvalid(error: unknown, key: string, what: string): void {
  checkErrorCode(error, 'INVALID_ARGUMENT', what);
  const named = (error as { key?: unknown }).key;
  check(named === key, `${what}: InvalidArgument names ${JSON.stringify(named)}, expected ${JSON.stringify(key)}`);
}

function label(call: BadCall): string {
  const show = (value: unknown): string => JSON.stringify(value, (_, v: unknown) => (typeof v === 'number' && Number.isNaN(v) ? 'NaN' : v));
  return `(${show(call.argv)}${call.options === undefined ? '' : `, ${show(call.options)}`})`;
}

// The contract is typed; these calls deliberately break the types.
type LooseRun = (argv: unknown, options?: unknown) => Promise<unknown>;
type LooseStream = (argv: unknown, options?: unknown) => unknown;

/** Validation of argv and options: SS-ARG-*, SS-ARGV-*. */
export const argumentCases = [
  defineCase({
    id: 'arguments.invalid-argv',
    title: 'malformed argv raises InvalidArgument naming the element, before any side effect',
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
  defineCase({
    id: 'arguments.invalid-options',
    title: 'an unknown option, or one of the wrong type or range, raises InvalidArgument naming it, before any side effect',
    requirements: ['SS-ARG-2'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const touch = ['sh', '-c', 'touch "$1"', 'sh', `${dir}/ran`];
      const run = ctx.sandbox.run.bind(ctx.sandbox) as LooseRun;
      const stream = ctx.sandbox.stream.bind(ctx.sandbox) as LooseStream;
      for (const call of [...BAD_COMMON, ...BAD_RUN]) {
        let pending: Promise<unknown>;
        try {
          pending = run(touch, call.options);
        } catch (error) {
          throw new ConformanceFailure(`run${label(call)} must reject, not throw synchronously (threw ${describeError(error)})`);
        }
        checkInvalid(await rejectionOf(pending, `run${label(call)}`), call.key, `run${label(call)}`);
      }
      for (const call of ctx.sandbox.capabilities.streaming ? [...BAD_COMMON, ...BAD_STREAM] : []) {
        checkInvalid(thrownBy(() => stream(touch, call.options), `stream${label(call)}`), call.key, `stream${label(call)}`);
      }
      await expectNeverRan(ctx, `${dir}/ran`, 'a command with an invalid option ran anyway', {
        path: `${dir}/later`,
        run: () => ctx.sandbox.run(['sh', '-c', 'touch "$1"', 'sh', `${dir}/later`]),
      });
    },
  }),
  defineCase({
    id: 'arguments.argv-byte-exact',
    title: 'each argv element reaches the command byte-exact, with no shell interpretation, also many of them and one larger than a pipe buffer',
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
