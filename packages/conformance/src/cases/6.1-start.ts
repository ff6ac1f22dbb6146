import { check, checkErrorCode, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { isHostPid } from '../host.js';
import { collect } from './support/collect.js';
import { readMarker, roundTrip, scratch, touch } from './support/observe.js';
import { startedOnEvidence } from './support/started-evidence.js';

/** The start of a command, and the id it has once started: SS-START-*, SS-ID-1. */
export const startCases = [
  defineCase({
    id: 'start.eager',
    title: '"The command MUST be started by the stream() call itself, without waiting for iteration, wait() or disposal": it acts within a few round trips while nothing reads it',
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
    title: '"An implementation MUST NOT start a command more than once for one run() or stream() call": one run(), four at once, and one stream()',
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
    title: '"a command that cannot be started MUST make iteration and wait() reject with SpawnFailed, and run() reject with it": a command that does not exist',
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
  defineCase({
    id: 'process.command-id',
    title: '"commandId MUST be a non-empty string that identifies the command, set without any of its output having been read": stable for the Process\'s life and not another command\'s; pid, where the backend has one, is the pid the command itself sees',
    requirements: ['SS-ID-1'],
    needs: ['streaming'],
    async run(ctx) {
      const dir = await scratch(ctx);
      // No output until the kit says so: the id cannot come from reading it. Then each command prints its own pid, $$, and "out".
      const script = 'while [ ! -f "$1/go" ]; do sleep 0.01; done; echo $$; echo out';
      // The token ($2, unused) lets the kit see it running: a start never confirmed fails in seconds.
      const argv = ['sh', '-c', script, 'sh', dir, ctx.token('command-id')];
      await using proc = ctx.sandbox.stream(argv);
      const api = proc as Partial<Pick<typeof proc, 'started' | 'commandId'>>;
      check(typeof api.started === 'function', 'the Process has no started()');
      await startedOnEvidence(ctx, proc, argv, 'a command');
      const id = proc.commandId;
      check(typeof id === 'string' && id !== '', `after started() resolved, commandId is ${JSON.stringify(id)}, expected a non-empty string`);
      for (let i = 0; i < 3; i++) check(proc.commandId === id, 'commandId changed between two reads');
      // A second command, alive beside the first: its id must be another (an id shared by two commands identifies neither).
      const secondArgv = ['sh', '-c', script, 'sh', dir, ctx.token('command-id')];
      await using second = ctx.sandbox.stream(secondArgv);
      await startedOnEvidence(ctx, second, secondArgv, 'a command');
      check(
        second.commandId !== id,
        `two commands running at once have the same commandId ${JSON.stringify(id)}, which so identifies neither` +
          (isHostPid(id) ? " (it is the pid of the process that runs the adapter)" : ''),
      );
      await touch(ctx, `${dir}/go`);
      for (const [started, name] of [[proc, 'first'], [second, 'second']] as const) {
        const text = Buffer.from((await collect(started)).stdout).toString();
        const own = /^([0-9]+)\nout\n$/.exec(text);
        check(own !== null, `the ${name} command's output was ${JSON.stringify(text)}, expected its pid and "out"`);
        // Section 2.2: pid is the backend's process id of the command, so it is the pid the command sees as its own.
        check(
          started.pid === undefined || started.pid === Number(own[1]),
          `the ${name} Process reports pid ${started.pid}, but its command's own pid ($$ of its shell) is ${own[1]}` +
            (isHostPid(started.pid) ? ": the pid of the process that runs the adapter, not the command's" : ''),
        );
      }
      check(proc.commandId === id, `commandId changed once output was read: ${JSON.stringify(proc.commandId)} after ${JSON.stringify(id)}`);
      await proc.wait();
      check(proc.commandId === id, `commandId changed once the command exited: ${JSON.stringify(proc.commandId)} after ${JSON.stringify(id)}`);
      await proc.started();
      // A command that never starts: started() rejects as wait() does.
      await using missing = ctx.sandbox.stream(['/nonexistent/sandstream-no-such-command']);
      checkErrorCode(await rejectionOf(missing.started(), 'started() of a command that cannot start'), 'SPAWN_FAILED', 'started() of a command that cannot start');
    },
  }),
];

function checkEqualCount(count: number, what: string): void {
  check(count === 1, `${what} started its command ${count} times`);
}
