import { checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { scratch } from './support/observe.js';

/** The environment and working directory: SS-ENV-*. */
export const environmentCases = [
  defineCase({
    id: 'environment.env',
    title: 'env variables reach the command, override base variables, and leave the rest of the base environment',
    requirements: ['SS-ENV-1'],
    async run(ctx) {
      const result = await ctx.sandbox.run(['sh', '-c', 'printf "%s|%s|%s" "$SANDSTREAM_ONE" "$HOME" "${PATH:+has-path}"'], {
        env: { SANDSTREAM_ONE: 'v a l=ue ✓', HOME: '/sandstream-home' },
      });
      checkEqual(result.stdoutText, 'v a l=ue ✓|/sandstream-home|has-path', 'the environment the command saw');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', 'printf %s "$SANDSTREAM_TWO"'], { env: { SANDSTREAM_TWO: 'streamed' } });
      let text = '';
      for await (const chunk of proc) text += Buffer.from(chunk.data).toString();
      checkEqual(text, 'streamed', 'the environment of a streamed command');
    },
  }),
  defineCase({
    id: 'environment.cwd',
    title: 'cwd is the command\'s working directory',
    requirements: ['SS-ENV-1'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const real = (await ctx.exec(['sh', '-c', 'cd "$1" && pwd -P', 'sh', dir])).stdoutText;
      const result = await ctx.sandbox.run(['pwd', '-P'], { cwd: dir });
      checkEqual(result.stdoutText, real, 'the working directory of run()');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['pwd', '-P'], { cwd: dir });
      let text = '';
      for await (const chunk of proc) text += Buffer.from(chunk.data).toString();
      checkEqual(text, real, 'the working directory of stream()');
    },
  }),
];
