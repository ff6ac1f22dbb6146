import { check, checkErrorCode, rejectionOf, thrownBy } from '../assert.js';
import { defineCase } from '../case.js';
import { untilReady } from './tree.js';

// The command and a child of it each record the USR1 they receive, so a signal's
// arrival at the leader and at the rest of the tree is visible in the sandbox.
const USR1_SCRIPT = [
  '( trap \'echo usr1 >> "$1/$2-child"\' USR1; echo x > "$1/$2-child-ready"; while :; do sleep 0.05; done ) &',
  'trap \'echo usr1 >> "$1/$2"\' USR1',
  'while [ ! -f "$1/$2-child-ready" ]; do sleep 0.01; done',
  'echo ready',
  'while :; do sleep 0.05; done',
].join('\n');

export const streamCases = [
  defineCase({
    id: 'stream.synchronous',
    title: 'stream() returns its Process synchronously and the Process is not thenable',
    requirements: ['SS-STREAM-1'],
    needs: ['streaming'],
    async run(ctx) {
      const proc = ctx.sandbox.stream(['sleep', '5']);
      try {
        check(!(proc instanceof Promise), 'stream() returned a Promise');
        check(!('then' in proc), 'the Process has a `then` member, so `await` would unwrap it');
        check(typeof proc[Symbol.asyncIterator] === 'function', 'the Process is not async iterable');
        check(typeof proc[Symbol.asyncDispose] === 'function', 'the Process is not async disposable');
        check(typeof proc.wait === 'function' && typeof proc.kill === 'function', 'the Process lacks wait() or kill()');
        check(typeof proc.id === 'string' && proc.id !== '', 'the Process has no id');
      } finally {
        await proc[Symbol.asyncDispose]();
      }
    },
  }),
  defineCase({
    id: 'stream.tagged-chunks',
    title: 'a Process iterates OutputChunks tagged stdout or stderr, with Uint8Array data',
    requirements: ['SS-STREAM-2'],
    needs: ['streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['sh', '-c', 'printf out; printf err >&2']);
      const seen = { stdout: '', stderr: '' };
      for await (const chunk of proc) {
        check(chunk.stream === 'stdout' || chunk.stream === 'stderr', `a chunk has stream ${JSON.stringify(chunk.stream)}`);
        check(chunk.data instanceof Uint8Array, 'a chunk\'s data is not a Uint8Array');
        seen[chunk.stream] += Buffer.from(chunk.data).toString('latin1');
      }
      check(seen.stdout === 'out' && seen.stderr === 'err', `expected "out" on stdout and "err" on stderr, got ${JSON.stringify(seen)}`);
    },
  }),
  defineCase({
    id: 'stream.single-iteration',
    title: 'a Process can be iterated only once; a second iteration raises InvalidState',
    requirements: ['SS-STREAM-2'],
    needs: ['streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['echo', 'once']);
      const first = proc[Symbol.asyncIterator]();
      const error = thrownBy(() => proc[Symbol.asyncIterator](), 'a second [Symbol.asyncIterator]() call');
      checkErrorCode(error, 'INVALID_STATE', 'a second iteration');
      let text = '';
      for (let next = await first.next(); !next.done; next = await first.next()) {
        text += Buffer.from(next.value.data).toString();
      }
      check(text === 'once\n', `the first iterator lost output after a refused second iteration (got ${JSON.stringify(text)})`);
    },
  }),
  defineCase({
    id: 'start.eager',
    title: 'the command starts at the stream() call, before any iteration or wait()',
    requirements: ['SS-START-1'],
    needs: ['streaming'],
    async run(ctx) {
      const dir = await ctx.scratch();
      await using proc = ctx.sandbox.stream(['sh', '-c', 'echo started > "$1/flag"; sleep 30', 'sh', dir]);
      await ctx.poll(async () => ctx.readFile(`${dir}/flag`), 5_000, 'the command did not start until the Process was iterated');
      check(!proc.exited, 'the command ended early');
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
  defineCase({
    id: 'process.kill',
    title: 'kill() signals its own command\'s tree and no other, defaults to SIGTERM, is a no-op after exit, and refuses unknown signals',
    requirements: ['SS-KILL-1', 'SS-CONC-1'],
    needs: ['streaming'],
    async run(ctx) {
      const dir = await ctx.scratch();
      await using target = ctx.sandbox.stream(['sh', '-c', USR1_SCRIPT, 'sh', dir, 'target']);
      await using neighbour = ctx.sandbox.stream(['sh', '-c', USR1_SCRIPT, 'sh', dir, 'neighbour']);
      await untilReady(target[Symbol.asyncIterator]());
      await untilReady(neighbour[Symbol.asyncIterator]());
      await target.kill('SIGUSR1');
      await ctx.poll(async () => ctx.readFile(`${dir}/target`), 5_000, 'kill(\'SIGUSR1\') never reached the command');
      await ctx.poll(async () => ctx.readFile(`${dir}/target-child`), 5_000, 'kill(\'SIGUSR1\') reached the command but not the child it started');
      check(!target.exited, 'a handled SIGUSR1 ended the command');
      await ctx.sleep(150);
      check((await ctx.readFile(`${dir}/neighbour`)) === undefined, 'kill() on one Process signalled another');
      check((await ctx.readFile(`${dir}/neighbour-child`)) === undefined, 'kill() on one Process signalled another\'s child');
      checkErrorCode(await rejectionOf(target.kill('SIGBOGUS' as never), 'kill(\'SIGBOGUS\')'), 'INVALID_ARGUMENT', 'kill() with an unknown signal');
      await target.kill();
      const result = await target.wait();
      check(result.signal === 'SIGTERM', `kill() without a signal should end the command by SIGTERM (got ${result.exitCode}/${result.signal})`);
      check(!neighbour.exited, 'killing one Process ended another');
      await target.kill('SIGKILL');
      const again = await target.wait();
      check(again.signal === 'SIGTERM', 'kill() after exit changed the result');
    },
  }),
];
