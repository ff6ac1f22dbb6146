import { check, checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { collect } from './support/collect.js';

/** Running as another account: SS-USER-*. */
export const userCases = [
  defineCase({
    id: 'user.run-as',
    title: '"the user option MUST run the command as that account": its uid is that account\'s, under run() and stream()',
    requirements: ['SS-USER-1'],
    needs: ['user'],
    async run(ctx) {
      const expected = (await ctx.exec(['id', '-u', 'nobody'])).stdoutText.trim();
      check(/^[0-9]+$/.test(expected), 'the sandbox has no "nobody" account to run as');
      const result = await ctx.sandbox.run(['id', '-u'], { user: 'nobody' });
      checkEqual(result.stdoutText.trim(), expected, 'the uid the command ran as');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['id', '-u'], { user: 'nobody' });
      const got = await collect(proc);
      checkEqual(Buffer.from(got.stdout).toString().trim(), expected, 'the uid a streamed command ran as');
    },
  }),
];
