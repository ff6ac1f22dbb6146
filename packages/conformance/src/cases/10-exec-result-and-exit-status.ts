import { encodeExecResult, type ExecResult } from '@sandstream/types';
import { check, checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { collect } from './support/collect.js';

/** ExecResult: SS-RESULT-*. */
export const resultCases = [
  defineCase({
    id: 'result.streamed-flag',
    title: '"A result from stream() MUST have streamed: true with empty stdout and stderr": and one from run() streamed: false with the output',
    requirements: ['SS-RESULT-1'],
    async run(ctx) {
      const ran = await ctx.sandbox.run(['sh', '-c', 'echo out; echo err >&2']);
      check(ran.streamed === false, 'a run() result has streamed: true');
      checkEqual(ran.stdoutText, 'out\n', 'run() stdout');
      checkEqual(ran.stderrText, 'err\n', 'run() stderr');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', 'echo out; echo err >&2']);
      await collect(proc);
      const streamed = await proc.wait();
      check(streamed.streamed === true, 'a stream() result has streamed: false');
      check(streamed.stdout.byteLength === 0 && streamed.stderr.byteLength === 0, 'a stream() result carries output');
    },
  }),
  defineCase({
    id: 'result.exit-codes',
    title: '"exitCode MUST be the code the command exited with (0 to 255) with signal null": exit codes 0, 1 and 255; death by a signal is exitCode null with its name',
    requirements: ['SS-RESULT-2'],
    async run(ctx) {
      for (const code of [0, 1, 255]) {
        const result = await ctx.sandbox.run(['sh', '-c', `exit ${code}`]);
        check(result.exitCode === code && result.signal === null, `exit ${code} reported as ${result.exitCode}/${result.signal}`);
        if (!ctx.sandbox.capabilities.streaming) continue;
        await using proc = ctx.sandbox.stream(['sh', '-c', `exit ${code}`]);
        const waited = await proc.wait();
        check(waited.exitCode === code && waited.signal === null, `streamed exit ${code} reported as ${waited.exitCode}/${waited.signal}`);
      }
      for (const signal of ['KILL', 'TERM', 'INT']) {
        const result = await ctx.sandbox.run(['sh', '-c', `kill -${signal} $$`]);
        check(result.exitCode === null && result.signal === `SIG${signal}`, `death by SIG${signal} reported as ${result.exitCode}/${result.signal}`);
      }
    },
  }),
  defineCase({
    id: 'result.schema',
    title: '"Every ExecResult, encoded to its wire form, MUST validate against the spec\'s ExecResult schema": results of a failure, a signal, a timeout, a cap and a stream()',
    requirements: ['SS-RESULT-3'],
    async run(ctx) {
      const { validatorFor } = await import('@sandstream/types');
      const validate = validatorFor('ExecResult');
      const results: ExecResult[] = [
        await ctx.sandbox.run(['sh', '-c', 'echo out; echo err >&2; exit 2']),
        await ctx.sandbox.run(['sh', '-c', 'kill -KILL $$']),
        await ctx.sandbox.run(['sleep', '5'], { timeout: 200 }),
        await ctx.sandbox.run(['head', '-c', '5000', '/dev/zero'], { maxOutputBytes: 10 }),
      ];
      if (ctx.sandbox.capabilities.streaming) {
        await using proc = ctx.sandbox.stream(['echo', 'x']);
        results.push(await proc.wait());
      }
      for (const result of results) {
        let encoded: unknown;
        try {
          encoded = encodeExecResult(result);
        } catch (error) {
          check(false, `a result could not be encoded: ${(error as Error).message}`);
        }
        check(validate(encoded), `a result does not match the schema: ${validate.issues.map((i) => `${i.instancePath || '/'} ${i.message}`).join('; ')}`);
      }
    },
  }),
];
