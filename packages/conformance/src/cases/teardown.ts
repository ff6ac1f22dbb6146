import type { ExecResult, Sandbox } from '@sandstream/types';
import { check, checkErrorCode, ConformanceFailure, describeError, HarnessError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { helperExec, type CaseContext } from '../context.js';
import { probeAlive, splitToken } from '../probes.js';
import { expectTreeGone, startTree, untilReady, type Tree } from './tree.js';

const decoder = new TextDecoder();

/**
 * Iterates until `ready` and every pid is recorded (so the tree is whole),
 * then leaves the loop the way `leave` says. Returns the pids.
 */
async function loopUntilReady(tree: Tree, leave: (pids: number[]) => 'break'): Promise<number[]> {
  let seen = '';
  let pids: number[] = [];
  for await (const chunk of tree.proc) {
    seen += decoder.decode(chunk.data);
    if (seen.includes('ready')) {
      pids = await tree.pids();
      if (leave(pids) === 'break') break;
    }
  }
  return pids;
}

class Thrown extends Error {
  constructor(readonly pids: number[]) {
    super('thrown by the loop body');
  }
}

export const teardownCases = [
  defineCase({
    id: 'teardown.dispose',
    title: 'leaving an `await using` scope terminates the running command and its tree before disposal resolves',
    requirements: ['SS-TEAR-1', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      let tree: Tree;
      let pids: number[];
      {
        tree = await startTree(ctx);
        await using proc = tree.proc;
        await untilReady(proc[Symbol.asyncIterator]());
        pids = await tree.pids();
      }
      check(tree.proc.exited, 'after disposal resolved, the Process does not report the command as exited');
      await expectTreeGone(ctx, tree, pids, 'after `await using` scope exit');
    },
  }),
  defineCase({
    id: 'teardown.dispose-never-iterated',
    title: 'disposing a Process that was never iterated terminates its command',
    requirements: ['SS-TEAR-1'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const pids = await tree.pids();
      await tree.proc[Symbol.asyncDispose]();
      check(tree.proc.exited, 'disposal resolved while the command still runs');
      await expectTreeGone(ctx, tree, pids, 'after disposing a never-iterated Process');
    },
  }),
  defineCase({
    id: 'teardown.break',
    title: '`break` out of `for await` terminates the command before the loop exits',
    requirements: ['SS-TEAR-2', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const pids = await loopUntilReady(tree, () => 'break');
      check(tree.proc.exited, 'control left the loop while the command still runs');
      await expectTreeGone(ctx, tree, pids, 'after break');
    },
  }),
  defineCase({
    id: 'teardown.throw',
    title: 'an exception thrown inside `for await` terminates the command before it propagates',
    requirements: ['SS-TEAR-2'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      let caught: unknown;
      try {
        await loopUntilReady(tree, (pids) => {
          throw new Thrown(pids);
        });
      } catch (error) {
        caught = error;
      }
      if (!(caught instanceof Thrown)) {
        throw new ConformanceFailure(`the loop body's exception did not propagate unchanged (got ${String(caught)})`);
      }
      check(tree.proc.exited, 'the exception left the loop while the command still runs');
      await expectTreeGone(ctx, tree, caught.pids, 'after a throw inside the loop');
    },
  }),
  defineCase({
    id: 'teardown.return',
    title: '`return` from inside `for await` terminates the command',
    requirements: ['SS-TEAR-2'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const firstReady = async (): Promise<number[]> => {
        let seen = '';
        for await (const chunk of tree.proc) {
          seen += decoder.decode(chunk.data);
          if (seen.includes('ready')) {
            const pids = await tree.pids();
            return pids;
          }
        }
        return [];
      };
      const pids = await firstReady();
      check(tree.proc.exited, 'return left the loop while the command still runs');
      await expectTreeGone(ctx, tree, pids, 'after return from inside the loop');
    },
  }),
  defineCase({
    id: 'teardown.abort-stream',
    title: 'aborting the signal terminates a streamed command; iteration and wait() reject with AbortError carrying the result',
    requirements: ['SS-TEAR-3', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      const controller = new AbortController();
      const tree = await startTree(ctx, { signal: controller.signal });
      const iterator = tree.proc[Symbol.asyncIterator]();
      await untilReady(iterator);
      const pids = await tree.pids();
      controller.abort(new Error('caller gave up'));
      let error: unknown;
      try {
        for (;;) {
          const next = await iterator.next();
          if (next.done) break;
        }
      } catch (thrown) {
        error = thrown;
      }
      checkErrorCode(error, 'ABORTED', 'iteration after abort');
      const waited = await rejectionOf(tree.proc.wait(), 'wait() after abort');
      checkErrorCode(waited, 'ABORTED', 'wait() after abort');
      const result = (waited as { result?: { streamed?: unknown } }).result;
      check(result !== undefined && result.streamed === true, 'AbortError.result is missing or not a streamed result');
      await expectTreeGone(ctx, tree, pids, 'after abort');
      await tree.proc[Symbol.asyncDispose]();
    },
  }),
  defineCase({
    id: 'teardown.abort-run',
    title: 'aborting the signal of run() terminates the command and rejects with AbortError carrying the partial output',
    requirements: ['SS-TEAR-3'],
    async run(ctx) {
      const dir = await ctx.scratch();
      const controller = new AbortController();
      const script = 'echo $$ > "$1/leader"; echo partial; while :; do sleep 0.05; done';
      const pending = ctx.sandbox.run(['sh', '-c', script, 'sh', dir], {
        signal: controller.signal,
        onOutput: (chunk) => {
          if (decoder.decode(chunk.data).includes('partial')) controller.abort(new Error('enough'));
        },
      });
      const error = await rejectionOf(pending, 'run() with an aborted signal');
      checkErrorCode(error, 'ABORTED', 'run() after abort');
      const result = (error as { result?: { stdout?: unknown; streamed?: unknown } }).result;
      check(result?.stdout instanceof Uint8Array, 'AbortError.result.stdout is missing');
      check(decoder.decode(result.stdout).includes('partial'), 'AbortError.result lost the output produced before the abort');
      check(result.streamed === false, 'the partial result of run() claims to be streamed');
      const leader = Number((await ctx.readFile(`${dir}/leader`))?.trim());
      await ctx.expectGone([leader], 500, 'after run() was aborted', dir);
    },
  }),
  defineCase({
    id: 'teardown.abort-before-start',
    title: 'an already-aborted signal starts nothing',
    requirements: ['SS-TEAR-3'],
    async run(ctx) {
      const dir = await ctx.scratch();
      const signal = AbortSignal.abort(new Error('too late'));
      const touch = (name: string): string[] => ['sh', '-c', 'touch "$1"', 'sh', `${dir}/${name}`];
      const checkNothingRan = (error: unknown, what: string): void => {
        checkErrorCode(error, 'ABORTED', what);
        check((error as { result?: unknown }).result === undefined, `${what}: AbortError carries a result, but nothing ran`);
      };
      checkNothingRan(await rejectionOf(ctx.sandbox.run(touch('run'), { signal }), 'run()'), 'run() with an aborted signal');
      if (ctx.sandbox.capabilities.streaming) {
        await using proc = ctx.sandbox.stream(touch('stream'), { signal });
        checkNothingRan(await rejectionOf(proc.wait(), 'wait()'), 'wait() of a stream() given an aborted signal');
      }
      await ctx.sleep(100);
      check((await ctx.readFile(`${dir}/run`)) === undefined, 'run() with an already-aborted signal started the command');
      check((await ctx.readFile(`${dir}/stream`)) === undefined, 'stream() with an already-aborted signal started the command');
    },
  }),
  defineCase({
    id: 'teardown.timeout-run',
    title: 'run() past its timeout terminates the command, sets timedOut and keeps the partial output',
    requirements: ['SS-TEAR-4'],
    async run(ctx) {
      const dir = await ctx.scratch();
      const script = 'echo $$ > "$1/leader"; echo partial; echo err-partial >&2; while :; do sleep 0.05; done';
      const result = await ctx.sandbox.run(['sh', '-c', script, 'sh', dir], { timeout: await ctx.timeoutFor(500) });
      check(result.timedOut === true, 'timedOut is not true after the timeout elapsed');
      check(decoder.decode(result.stdout) === 'partial\n', `stdout before the timeout was not kept (got ${JSON.stringify(decoder.decode(result.stdout))})`);
      check(decoder.decode(result.stderr) === 'err-partial\n', 'stderr before the timeout was not kept');
      check(result.exitCode !== 0, 'a command ended by the timeout reports exit code 0');
      const leader = Number((await ctx.readFile(`${dir}/leader`))?.trim());
      await ctx.expectGone([leader], 500, 'after the timeout', dir);
    },
  }),
  defineCase({
    id: 'teardown.timeout-stream',
    title: 'stream() past its timeout terminates the command; chunks before it were delivered and wait() reports timedOut',
    requirements: ['SS-TEAR-4', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx, { timeout: await ctx.timeoutFor(1_000) });
      let seen = '';
      for await (const chunk of tree.proc) seen += decoder.decode(chunk.data);
      check(seen.includes('ready'), 'output printed before the timeout was not delivered');
      const result = await tree.proc.wait();
      check(result.timedOut === true, 'timedOut is not true after the timeout elapsed');
      await expectTreeGone(ctx, tree, await tree.pids(), 'after the timeout');
    },
  }),
  defineCase({
    id: 'teardown.close',
    title: 'Sandbox.close() terminates every process it started, including one never iterated nor disposed, and then refuses new commands',
    requirements: ['SS-TEAR-5'],
    async run(ctx) {
      // The case's own sandbox is closed; an observer looks at its environment afterwards:
      // a handle from the adapter's `attach` hook, or else a second sandbox, which sees the
      // first one's processes only where sandboxes share a host (checked before close()).
      const token = ctx.token('close');
      const forever = ['sh', '-c', 'echo $$; while :; do sleep 0.05; done', 'sh', token];
      const observer = await openObserver(ctx);
      try {
        await closeAndProbe(ctx, observer, forever, token);
      } finally {
        // The observer's close() must leave the environment alone; a failure midway must not leak it.
        await observer.sandbox.close().catch(() => undefined);
      }
    },
  }),

  defineCase({
    id: 'teardown.leader-exit',
    title: 'when the command exits by itself, what it started in the background does not outlive its result, and cannot hold wait() open',
    requirements: ['SS-TEAR-6'],
    async run(ctx) {
      const dir = await ctx.scratch();
      const script = [
        '( while :; do sleep 0.05; done ) & echo $! > "$1/holder"',
        '( while :; do sleep 0.05; done ) >/dev/null 2>&1 & echo $! > "$1/detached"',
        'echo done',
      ].join('\n');
      const result = await ctx.sandbox.run(['sh', '-c', script, 'sh', dir], { timeout: 30_000 });
      check(!result.timedOut, 'a background child holding the output pipe kept run() waiting until the timeout');
      check(result.exitCode === 0, `the command itself should exit 0 (got ${result.exitCode}/${result.signal})`);
      check(decoder.decode(result.stdout) === 'done\n', 'the output of a command with a background child was not delivered');
      const pids = [Number((await ctx.readFile(`${dir}/holder`))?.trim()), Number((await ctx.readFile(`${dir}/detached`))?.trim())];
      await ctx.expectGone(pids, ctx.graceMs + 1_000, 'background children of an exited command', dir);
    },
  }),
  defineCase({
    id: 'teardown.sigterm-first',
    title: 'teardown sends SIGTERM first, so a handler gets to run before SIGKILL',
    requirements: ['SS-TEAR-7'],
    async run(ctx) {
      const dir = await ctx.scratch();
      const script = 'trap \'echo handled > "$1/term"; exit 7\' TERM; echo ready; while :; do sleep 0.05; done';
      const handled = async (how: string): Promise<void> => {
        check((await ctx.readFile(`${dir}/term`))?.trim() === 'handled', `${how}: the command's SIGTERM handler never ran; was it killed outright?`);
        await ctx.exec(['rm', '-f', `${dir}/term`]);
      };
      // Aborting run() once the handler is installed starts the termination sequence at a known point.
      const { result: aborted } = await runThenAbortWhenReady(ctx, ['sh', '-c', script, 'sh', dir]);
      await handled('after run() was aborted');
      check(aborted?.exitCode === 7, `the handler's exit code 7 was not reported by run() (got ${aborted?.exitCode}/${aborted?.signal})`);
      if (!ctx.sandbox.capabilities.streaming) return;
      const proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir]);
      await untilReady(proc[Symbol.asyncIterator]());
      await proc[Symbol.asyncDispose]();
      await handled('after disposal');
      const result = await proc.wait();
      check(result.exitCode === 7, `the handler's exit code 7 was not reported (got ${result.exitCode}/${result.signal})`);
    },
  }),
  defineCase({
    id: 'teardown.sigkill-after-grace',
    title: 'a command that ignores SIGTERM is killed after the grace period, not before',
    requirements: ['SS-TEAR-7', 'SS-TEAR-6'],
    async run(ctx) {
      const dir = await ctx.scratch();
      // An ignored signal stays ignored across exec, so the whole tree ignores SIGTERM.
      const script = 'trap "" TERM; echo $$ > "$1/leader"; ( while :; do sleep 0.05; done ) & echo $! > "$1/child"; echo ready; while :; do sleep 0.05; done';
      const checkTimely = (elapsed: number, how: string): void => {
        check(elapsed >= ctx.graceMs * 0.8, `${how}: the command was killed ${Math.round(elapsed)} ms after teardown began, before the ${ctx.graceMs} ms grace period`);
        check(elapsed <= ctx.graceMs + 5_000, `${how}: teardown took ${Math.round(elapsed)} ms, far beyond the ${ctx.graceMs} ms grace period`);
      };
      const checkGone = async (how: string): Promise<void> => {
        const pids = ['leader', 'child'].map(async (name) => Number((await ctx.readFile(`${dir}/${name}`))?.trim()));
        await ctx.expectGone(await Promise.all(pids), 1_000, how, dir);
      };
      const { result: aborted, abortedAt } = await runThenAbortWhenReady(ctx, ['sh', '-c', script, 'sh', dir]);
      checkTimely(performance.now() - abortedAt, 'after run() was aborted');
      check(aborted?.signal === 'SIGKILL', `a command that ignored SIGTERM should end by SIGKILL (got ${aborted?.exitCode}/${aborted?.signal})`);
      await checkGone('after SIGKILL at the abort of run()');
      if (!ctx.sandbox.capabilities.streaming) return;
      const proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir]);
      await untilReady(proc[Symbol.asyncIterator]());
      const disposing = performance.now();
      await proc[Symbol.asyncDispose]();
      checkTimely(performance.now() - disposing, 'disposal');
      const result = await proc.wait();
      check(result.signal === 'SIGKILL', `a command that ignored SIGTERM should end by SIGKILL (got ${result.exitCode}/${result.signal})`);
      await checkGone('after SIGKILL at disposal');
    },
  }),
  defineCase({
    id: 'teardown.after-caller-abort',
    title: 'teardown completes after the caller\'s signal has fired',
    requirements: ['SS-TEAR-8'],
    needs: ['streaming'],
    async run(ctx) {
      const controller = new AbortController();
      const dir = await ctx.scratch();
      const script = 'trap "" TERM; echo $$ > "$1/leader"; echo ready; while :; do sleep 0.05; done';
      const proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir], { signal: controller.signal });
      await untilReady(proc[Symbol.asyncIterator]());
      controller.abort(new Error('caller gave up'));
      await proc[Symbol.asyncDispose]();
      check(proc.exited, 'disposal after the caller\'s abort resolved while the command still runs');
      const leader = Number((await ctx.readFile(`${dir}/leader`))?.trim());
      await ctx.expectGone([leader], 500, 'after disposal following the caller\'s abort', dir);
    },
  }),
  defineCase({
    id: 'teardown.garbage-collected',
    title: 'a Process garbage-collected without disposal is terminated by a safety net',
    requirements: ['SS-TEAR-9'],
    needs: ['streaming'],
    async run(ctx) {
      const gc = await exposeGc();
      const dir = await ctx.scratch();
      const script = 'echo $$ > "$1/leader"; while :; do sleep 0.05; done';
      // The warning must name the command; the scratch directory is part of its argv.
      const warnings: string[] = [];
      const onWarning = (warning: Error): void => {
        warnings.push(warning.message);
      };
      process.on('warning', onWarning);
      try {
        await dropAndCollect(ctx, gc, script, dir);
        await ctx.poll(async () => (warnings.some((w) => w.includes(dir)) ? true : undefined), 2_000, 'the command was terminated, but no process warning named it');
      } finally {
        process.off('warning', onWarning);
      }
    },
  }),
];

/** Starts a command whose Process nobody keeps, then collects garbage until the command is gone. */
async function dropAndCollect(ctx: CaseContext, gc: () => void, script: string, dir: string): Promise<void> {
  // Started in a separate frame so no local variable keeps the Process reachable.
  ((): void => {
    ctx.sandbox.stream(['sh', '-c', script, 'sh', dir]);
  })();
  const leader = Number(
    await ctx.poll(async () => (await ctx.readFile(`${dir}/leader`))?.trim() || undefined, 5_000, 'the command never started'),
  );
  const deadline = performance.now() + ctx.graceMs + 5_000;
  while (await ctx.isAlive(leader, dir)) {
    if (performance.now() > deadline) {
      throw new ConformanceFailure('a Process dropped without disposal kept its command running after garbage collection');
    }
    gc();
    await ctx.sleep(50);
  }
}

/**
 * Runs `argv` with run() and aborts it as soon as it printed `ready`, so the
 * termination sequence starts at a point the command has reached, whatever
 * the backend's start latency. Returns the AbortError's result.
 */
async function runThenAbortWhenReady(ctx: CaseContext, argv: string[]): Promise<{ result: ExecResult | undefined; abortedAt: number }> {
  const controller = new AbortController();
  let seen = '';
  let abortedAt = 0;
  const error = await rejectionOf(
    ctx.sandbox.run(argv, {
      signal: controller.signal,
      timeout: 30_000,
      onOutput: (chunk) => {
        seen += decoder.decode(chunk.data);
        if (!controller.signal.aborted && seen.includes('ready')) {
          abortedAt = performance.now();
          controller.abort(new Error('the case ends the command'));
        }
      },
    }),
    'run() aborted once ready',
  );
  checkErrorCode(error, 'ABORTED', 'run() aborted once ready');
  return { result: (error as { result?: ExecResult }).result, abortedAt };
}

async function exposeGc(): Promise<() => void> {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing) return existing;
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

interface Observer {
  readonly sandbox: Sandbox;
  /** From the attach hook: its commands may fail once the environment is gone. */
  readonly attached: boolean;
}

async function openObserver(ctx: CaseContext): Promise<Observer> {
  if (ctx.attach === undefined) return { sandbox: await ctx.factory(), attached: false };
  let sandbox: Sandbox;
  try {
    sandbox = await ctx.attach(ctx.sandbox);
  } catch (error) {
    throw new HarnessError(`the adapter module's attach hook failed: ${describeError(error)}`);
  }
  return { sandbox, attached: true };
}

/** Starts commands in `ctx.sandbox`, closes it, and checks through the observer that they are gone. */
async function closeAndProbe(ctx: CaseContext, observer: Observer, forever: string[], token: string): Promise<void> {
  const { sandbox } = ctx;
  const pids: Array<Promise<number>> = [];
  const printedPid = (): { onOutput(chunk: { data: Uint8Array }): void; pid: Promise<number> } => {
    let resolve!: (pid: number) => void;
    const pid = new Promise<number>((r) => (resolve = r));
    let seen = '';
    return { pid, onOutput: (chunk) => { seen += decoder.decode(chunk.data); if (seen.includes('\n')) resolve(Number(seen.trim())); } };
  };
  const runPid = printedPid();
  pids.push(runPid.pid);
  const running = sandbox.run(forever, { onOutput: runPid.onOutput });
  const settled = running.then(
    (result) => check(result.signal !== null || result.exitCode !== 0, 'a run() cut short by close() reports success'),
    (error: unknown) => {
      throw new ConformanceFailure(`a run() in flight when close() was called must resolve with a result reporting its end; it rejected with ${describeError(error)}`);
    },
  );
  // Awaited below; handled now so an earlier failure cannot leave it unhandled.
  settled.catch(() => undefined);
  const procs = sandbox.capabilities.streaming ? [sandbox.stream(forever), sandbox.stream(forever)] : [];
  for (const proc of procs) {
    const pid = printedPid();
    const iterator = proc[Symbol.asyncIterator]();
    pids.push(pid.pid);
    void iterator.next().then((next) => { if (!next.done) pid.onOutput(next.value); }, () => undefined);
  }
  const limit = await ctx.timeoutFor(10_000);
  const known = await Promise.race([
    Promise.all(pids),
    ctx.sleep(limit).then(() => {
      throw new ConformanceFailure(`the commands never printed their pids (waited ${limit} ms)`);
    }),
  ]);

  // The observation must be able to see the commands before their absence can mean anything.
  const look = helperExec(observer.sandbox, ctx.signal);
  for (const pid of known) {
    if (await probeAlive(look, pid, token)) continue;
    if (observer.attached) {
      throw new HarnessError(`the handle from the attach hook does not see pid ${pid}, a running command of the sandbox it was attached to, so it cannot show that close() ended it`);
    }
    throw new HarnessError(
      `a second sandbox does not see pid ${pid}, a running command of the first: each factory call is its own environment ` +
        '(a VM, a PID namespace), so the kit cannot observe a sandbox after its close(); export `conformanceHooks.attach` ' +
        'from the adapter module (see "Observing a sandbox after close()" in the kit\'s README)',
    );
  }

  await sandbox.close();
  for (const proc of procs) {
    check(proc.exited, 'close() resolved while a Process it started still runs');
    const result = await proc.wait().catch((error: unknown) => {
      throw new ConformanceFailure(`wait() of a Process ended by close() must resolve with its result; it rejected with ${describeError(error)}`);
    });
    check(result.signal !== null || result.exitCode !== 0, 'a command terminated by close() reports success');
  }
  await settled;

  if (await environmentGone(observer, token)) {
    // close() destroyed the environment (the adapter owns it): nothing in it can have survived.
  } else {
    for (const pid of known) {
      check(!(await probeAlive(look, pid, token)), `close() resolved while pid ${pid}, a command it started, still runs`);
    }
  }

  await sandbox.close();
  let refused: unknown;
  try {
    sandbox.stream(['true']);
  } catch (error) {
    refused = error;
  }
  checkErrorCode(refused, 'SANDBOX_CLOSED', 'stream() on a closed sandbox');
  checkErrorCode(await rejectionOf(sandbox.run(['true']), 'run() on a closed sandbox'), 'SANDBOX_CLOSED', 'run() on a closed sandbox');
}

/**
 * Whether the observer shows the environment gone: an attached handle whose
 * commands no longer run (they fail, or do not print what they were asked
 * to). A second sandbox of its own must keep working.
 */
async function environmentGone(observer: Observer, token: string): Promise<boolean> {
  const expected = `observer-${token}`;
  const [a, b] = splitToken(expected);
  let printed: string;
  try {
    printed = (await observer.sandbox.run(['sh', '-c', 'printf "%s%s" "$1" "$2"', 'sh', a, b], { timeout: 10_000 })).stdoutText;
  } catch (error) {
    if (observer.attached) return true;
    throw new ConformanceFailure(`run() failed in a second sandbox after the first was closed: ${describeError(error)}`);
  }
  if (printed === expected) return false;
  if (observer.attached) return true;
  throw new ConformanceFailure(`a helper command in a second sandbox printed ${JSON.stringify(printed.slice(0, 80))} instead of its marker`);
}
