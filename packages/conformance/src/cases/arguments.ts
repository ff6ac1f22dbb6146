import type { RunOptions, StreamOptions } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, ConformanceFailure, describeError, rejectionOf, thrownBy } from '../assert.js';
import { defineCase } from '../case.js';
import { expectNeverRan, readMarker, scratch } from './support/observe.js';

interface BadCall {
  readonly argv: unknown;
  readonly options?: unknown;
  readonly key: string;
}

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
    title: 'each argv element reaches the command byte-exact, with no shell interpretation',
    requirements: ['SS-ARGV-1'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const hostile = [
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
      const options: RunOptions = { cwd: dir };
      const result = await ctx.sandbox.run(['printf', '%s\\000', ...hostile], options);
      check(result.exitCode === 0, `printf failed: ${result.stderrText}`);
      const expected = Buffer.from(hostile.map((arg) => `${arg}\0`).join(''), 'utf8');
      checkEqual(result.stdout, new Uint8Array(expected), 'the arguments as the command received them');
      check((await readMarker(ctx, `${dir}/pwned`)) === undefined, 'an argument was interpreted by a shell');
      if (!ctx.sandbox.capabilities.streaming) return;
      const streamOptions: StreamOptions = { cwd: dir };
      await using proc = ctx.sandbox.stream(['printf', '%s\\000', ...hostile], streamOptions);
      const parts: Uint8Array[] = [];
      for await (const chunk of proc) if (chunk.stream === 'stdout') parts.push(chunk.data);
      checkEqual(new Uint8Array(Buffer.concat(parts)), new Uint8Array(expected), 'the arguments as a streamed command received them');
    },
  }),
];
