import { check, checkErrorCode, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { readMarker, roundTrip, scratch } from './support/observe.js';

/** The start of a command: SS-START-*. */
export const startCases = [
  defineCase({
    id: 'start.eager',
    title: 'the command starts at the stream() call, before any iteration or wait()',
    requirements: ['SS-START-1'],
    needs: ['streaming'],
    async run(ctx) {
      const dir = await scratch(ctx);
      // A few round trips of this backend: a start that waits for iteration, or for a timer, misses it.
      const within = Math.max(1_000, Math.ceil(3 * (await roundTrip(ctx))));
      await using proc = ctx.sandbox.stream(['sh', '-c', 'echo started > "$1/flag"; sleep 30', 'sh', dir]);
      await ctx.poll(
        async () => readMarker(ctx, `${dir}/flag`),
        within,
        `the command did not start within ${within} ms of the stream() call (a few round trips of this backend), without iteration or wait()`,
      );
      check(!proc.exited, 'the command ended early');
    },
  }),
  defineCase({
    id: 'start.once',
    title: 'one run() or stream() call starts its command once',
    requirements: ['SS-START-2'],
    async run(ctx) {
      const dir = await scratch(ctx);
      // Each start of the command appends a line; the result proves the command completed.
      const argv = (name: string): string[] => ['sh', '-c', 'echo start >> "$1"', 'sh', `${dir}/${name}`];
      const count = async (name: string): Promise<number> =>
        ((await readMarker(ctx, `${dir}/${name}`)) ?? '').split('\n').filter((line) => line === 'start').length;
      await ctx.sandbox.run(argv('run'));
      checkEqualCount(await count('run'), 'one run() call');
      const runs = await Promise.all(Array.from({ length: 4 }, (_, i) => ctx.sandbox.run(argv(`run-${i}`))));
      for (const [i] of runs.entries()) checkEqualCount(await count(`run-${i}`), `run() call ${i + 1} of 4 at once`);
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(argv('stream'));
      await proc.wait();
      checkEqualCount(await count('stream'), 'one stream() call');
    },
  }),
  defineCase({
    id: 'start.spawn-failed',
    title: 'a command that cannot start makes wait(), iteration and run() reject with SpawnFailed',
    requirements: ['SS-START-1'],
    async run(ctx) {
      const missing = '/nonexistent/sandstream-no-such-command';
      checkErrorCode(await rejectionOf(ctx.sandbox.run([missing]), 'run()'), 'SPAWN_FAILED', 'run() of a command that cannot start');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream([missing]);
      checkErrorCode(await rejectionOf(proc.wait(), 'wait()'), 'SPAWN_FAILED', 'wait() of a command that cannot start');
      await using again = ctx.sandbox.stream([missing]);
      const iterate = (async () => {
        for await (const chunk of again) void chunk;
      })();
      checkErrorCode(await rejectionOf(iterate, 'iteration'), 'SPAWN_FAILED', 'iterating a command that cannot start');
    },
  }),
];
function checkEqualCount(count: number, what: string): void {
  check(count === 1, `${what} started its command ${count} times`);
}
