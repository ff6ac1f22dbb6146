import { ConformanceFailure, describeError, rejectionOf, thrownBy } from '../assert.js';
import { defineCase } from '../case.js';
import { expectNeverRan, scratch } from './support/observe.js';
import { checkInvalid, label, type BadCall, type LooseRun, type LooseStream } from './support/invalid-calls.js';

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

/** Unknown and malformed options refused: SS-ARG-2. */
export const optionsCases = [
  defineCase({
    id: 'arguments.invalid-options',
    title: '"An unknown option key, or an option of the wrong type or range, MUST be rejected with InvalidArgument whose key names the option, before any side effect": for run() and stream()',
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
];
