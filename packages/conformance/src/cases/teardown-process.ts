import type { ExecResult, Process } from '@sandstream/types';
import { check, checkErrorCode, ConformanceFailure, describeError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import {
  bound,
  expectGoneNow,
  expectAlive,
  expectNeverRan,
  disposeExplained,
  readMarker,
  readPid,
  scratch,
  survivorsFailure,
  termination,
  type Watched,
} from './support/observe.js';
import { sequenceCases } from './teardown-sequence.js';
import { seenInRun, signal } from './support/arrival.js';
import { expectTreeGone, loopingUntilReady, startTree, treePrinted, untilReady, watchTree, type Tree } from './support/tree.js';

const decoder = new TextDecoder();

/**
 * Iterates until `ready` and every pid is recorded and seen alive (so the
 * tree is whole), then leaves the loop the way `leave` says. Returns the
 * processes.
 */
async function loopUntilReady(ctx: CaseContext, tree: Tree, leave: (processes: Watched[]) => 'break'): Promise<Watched[]> {
  return loopingUntilReady(ctx, tree, async (note) => {
    let processes: Watched[] = [];
    for await (const chunk of tree.proc) {
      if (note(decoder.decode(chunk.data))) {
        processes = await watchTree(ctx, tree);
        if (leave(processes) === 'break') break;
      }
    }
    return processes;
  });
}

class Thrown extends Error {
  constructor(readonly processes: Watched[]) {
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
      const tree = await startTree(ctx);
      let processes: Watched[] = [];
      try {
        await using proc = tree.proc;
        await untilReady(proc[Symbol.asyncIterator](), treePrinted(ctx, tree));
        processes = await watchTree(ctx, tree);
      } catch (error) {
        throw await survivorsFailure(ctx, processes, tree.dir, 'disposal at `await using` scope exit', error);
      }
      check(tree.proc.exited, 'after disposal resolved, the Process does not report the command as exited');
      // Not the adapter's report: the processes themselves must be gone at the first look.
      await expectTreeGone(ctx, tree, processes, 'when disposal at `await using` scope exit resolved');
    },
  }),
  defineCase({
    id: 'teardown.dispose-never-iterated',
    title: 'disposing a Process that was never iterated terminates its command',
    requirements: ['SS-TEAR-1'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const processes = await watchTree(ctx, tree);
      await disposeExplained(ctx, tree.proc, processes, tree.dir);
      check(tree.proc.exited, 'disposal resolved while the command still runs');
      await expectTreeGone(ctx, tree, processes, 'when disposing a never-iterated Process resolved');
    },
  }),
  defineCase({
    id: 'teardown.break',
    title: '`break` out of `for await` terminates the command before the loop exits',
    requirements: ['SS-TEAR-2', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const processes = await loopUntilReady(ctx, tree, () => 'break');
      check(tree.proc.exited, 'control left the loop while the command still runs');
      await expectTreeGone(ctx, tree, processes, 'when control left the loop by break');
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
        await loopUntilReady(ctx, tree, (processes) => {
          throw new Thrown(processes);
        });
      } catch (error) {
        caught = error;
      }
      if (!(caught instanceof Thrown)) {
        throw new ConformanceFailure(`the loop body's exception did not propagate unchanged (got ${describeError(caught)})`);
      }
      check(tree.proc.exited, 'the exception left the loop while the command still runs');
      await expectTreeGone(ctx, tree, caught.processes, 'when a throw inside the loop propagated');
    },
  }),
  defineCase({
    id: 'teardown.return',
    title: '`return` from inside `for await` terminates the command',
    requirements: ['SS-TEAR-2'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const processes = await loopingUntilReady(ctx, tree, async (note): Promise<Watched[]> => {
        for await (const chunk of tree.proc) {
          if (note(decoder.decode(chunk.data))) return await watchTree(ctx, tree);
        }
        return [];
      });
      check(tree.proc.exited, 'return left the loop while the command still runs');
      await expectTreeGone(ctx, tree, processes, 'when return left the loop');
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
      await untilReady(iterator, treePrinted(ctx, tree));
      const processes = await watchTree(ctx, tree);
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
      // wait() is idempotent, rejections included.
      const again = await rejectionOf(tree.proc.wait(), 'a second wait() after abort');
      check(again === waited || (again instanceof Error && describeError(again) === describeError(waited)), `a second wait() after abort rejected differently: ${describeError(again)} after ${describeError(waited)}`);
      await expectTreeGone(ctx, tree, processes, 'when wait() rejected after abort');
      await tree.proc[Symbol.asyncDispose]();
    },
  }),
  defineCase({
    id: 'teardown.abort-run',
    title: 'aborting the signal of run() terminates the command and rejects with AbortError carrying the partial output',
    requirements: ['SS-TEAR-3'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const controller = new AbortController();
      // The command prints "partial" only once its pid is recorded.
      const script = 'echo $$ > "$1/leader"; echo partial; : > "$1/printed"; while :; do sleep 0.05; done';
      let seen = '';
      const partial = signal();
      const pending = ctx.sandbox.run(['sh', '-c', script, 'sh', dir], {
        signal: controller.signal,
        onOutput: (chunk) => {
          seen += decoder.decode(chunk.data);
          if (seen.includes('partial')) {
            partial.saw();
            controller.abort(new Error('enough'));
          }
        },
      });
      await seenInRun(pending, partial.promise, { ctx, marker: `${dir}/printed`, what: 'the line "partial" (through run()\'s onOutput)', got: () => seen }, controller);
      const error = await rejectionOf(pending, 'run() with an aborted signal');
      checkErrorCode(error, 'ABORTED', 'run() after abort');
      const result = (error as { result?: { stdout?: unknown; streamed?: unknown } }).result;
      check(result?.stdout instanceof Uint8Array, 'AbortError.result.stdout is missing');
      check(decoder.decode(result.stdout).includes('partial'), 'AbortError.result lost the output produced before the abort');
      check(result.streamed === false, 'the partial result of run() claims to be streamed');
      const leader = await readPid(ctx, `${dir}/leader`, 'the aborted command');
      await expectGoneNow(ctx, [{ pid: leader, role: 'the command itself' }], dir, 'when run() rejected after the abort');
    },
  }),
  defineCase({
    id: 'teardown.abort-before-start',
    title: 'an already-aborted signal starts nothing',
    requirements: ['SS-TEAR-3'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const signal = AbortSignal.abort(new Error('too late'));
      const touchArgv = (name: string): string[] => ['sh', '-c', 'touch "$1"', 'sh', `${dir}/${name}`];
      const checkNothingRan = (error: unknown, what: string): void => {
        checkErrorCode(error, 'ABORTED', what);
        check((error as { result?: unknown }).result === undefined, `${what}: AbortError carries a result, but nothing ran`);
      };
      checkNothingRan(await rejectionOf(ctx.sandbox.run(touchArgv('run'), { signal }), 'run()'), 'run() with an aborted signal');
      // A later run() without the signal must leave its marker: then the refused one had as long to act.
      await expectNeverRan(ctx, `${dir}/run`, 'run() with an already-aborted signal started the command', {
        path: `${dir}/later-run`,
        run: () => ctx.sandbox.run(touchArgv('later-run')),
      });
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(touchArgv('stream'), { signal });
      checkNothingRan(await rejectionOf(proc.wait(), 'wait()'), 'wait() of a stream() given an aborted signal');
      await expectNeverRan(ctx, `${dir}/stream`, 'stream() with an already-aborted signal started the command', {
        path: `${dir}/later-stream`,
        run: async () => {
          await using later = ctx.sandbox.stream(touchArgv('later-stream'));
          await later.wait();
        },
      });
    },
  }),
  defineCase({
    id: 'teardown.timeout-run',
    title: 'run() past its timeout terminates the command, sets timedOut and keeps the partial output',
    requirements: ['SS-TEAR-4'],
    async run(ctx) {
      // The command marks that both lines are written. Output counts as "before the timeout" only
      // once the mark shows it was: on a loaded backend the timeout may fall between the lines, and
      // then the run is repeated with twice the timeout rather than judged on what was never written.
      // It then becomes one process (exec): a shell with a child of its own would report the
      // child's death by a signal on stderr ("Terminated") when a backend signals the tree
      // process by process, and that is output the command wrote, not lost or added.
      const script = 'echo $$ > "$1/leader"; echo partial; echo err-partial >&2; : > "$1/written"; exec sleep 600';
      let timeout = await ctx.timeoutFor(500);
      let dir = '';
      let result: ExecResult | undefined;
      for (let attempt = 0; attempt < 4; attempt++, timeout *= 2) {
        dir = await scratch(ctx);
        result = await ctx.sandbox.run(['sh', '-c', script, 'sh', dir], { timeout });
        check(result.timedOut === true, 'timedOut is not true after the timeout elapsed');
        if ((await readMarker(ctx, `${dir}/written`)) !== undefined) break;
        result = undefined;
      }
      if (result === undefined) {
        throw new ConformanceFailure(`the command never got to write two lines before its timeout, up to ${timeout / 2} ms`);
      }
      check(decoder.decode(result.stdout) === 'partial\n', `stdout before the timeout was not kept (got ${JSON.stringify(decoder.decode(result.stdout))})`);
      check(decoder.decode(result.stderr) === 'err-partial\n', `stderr before the timeout was not kept (got ${JSON.stringify(decoder.decode(result.stderr))})`);
      check(result.exitCode !== 0, 'a command ended by the timeout reports exit code 0');
      const leader = await readPid(ctx, `${dir}/leader`, 'the timed-out command');
      await expectGoneNow(ctx, [{ pid: leader, role: 'the command itself' }], dir, 'when run() resolved after the timeout');
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
      await expectTreeGone(ctx, tree, await tree.processes(), 'when wait() resolved after the timeout');
    },
  }),
  ...sequenceCases,
  defineCase({
    id: 'teardown.after-caller-abort',
    title: 'teardown completes after the caller\'s signal has fired',
    requirements: ['SS-TEAR-8'],
    needs: ['streaming'],
    async run(ctx) {
      const controller = new AbortController();
      const dir = await scratch(ctx);
      const script = 'trap "" TERM; echo $$ > "$1/leader"; echo ready; : > "$1/printed"; while :; do sleep 0.05; done';
      const proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir], { signal: controller.signal });
      await untilReady(proc[Symbol.asyncIterator](), { ctx, marker: `${dir}/printed` });
      const leader: Watched[] = [{ pid: await readPid(ctx, `${dir}/leader`, 'the command'), role: 'the command itself' }];
      await expectAlive(ctx, leader, dir);
      controller.abort(new Error('caller gave up'));
      await disposeExplained(ctx, proc, leader, dir);
      check(proc.exited, 'disposal after the caller\'s abort resolved while the command still runs');
      await expectGoneNow(ctx, leader, dir, 'when disposal following the caller\'s abort resolved');
    },
  }),
  defineCase({
    id: 'teardown.garbage-collected',
    title: 'a Process garbage-collected without disposal is terminated by a safety net',
    requirements: ['SS-TEAR-9'],
    needs: ['streaming'],
    expectedWarnings: ['SANDSTREAM_PROCESS_LEAKED'],
    async run(ctx) {
      const gc = await exposeGc();
      const dir = await scratch(ctx);
      const script = 'echo $$ > "$1/leader"; while :; do sleep 0.05; done';
      // The warning must name the command; the scratch directory is part of its argv.
      const warnings: string[] = [];
      const onWarning = (warning: Error): void => {
        warnings.push(warning.message);
      };
      process.on('warning', onWarning);
      try {
        await dropAndCollect(ctx, gc, script, dir);
        const within = await bound(ctx, 2_000);
        await ctx.poll(async () => (warnings.some((w) => w.includes(dir)) ? true : undefined), within, 'the command was terminated, but no process warning named it');
      } finally {
        process.off('warning', onWarning);
      }
    },
  }),
];

/** Starts a command whose Process nobody keeps, then collects garbage until the command is gone. */
async function dropAndCollect(ctx: CaseContext, gc: () => void, script: string, dir: string): Promise<void> {
  // Held until the probe has seen the command alive: a collection before that (V8's own, or a
  // case beside this one calling gc()) would end it early and the probe could prove nothing.
  // Then the one reference goes, and no local variable keeps the Process reachable.
  const held: { proc?: unknown } = { proc: ctx.sandbox.stream(['sh', '-c', script, 'sh', dir]) };
  const leader = await readPid(ctx, `${dir}/leader`, 'the dropped command');
  await expectAlive(ctx, [{ pid: leader, role: 'the dropped command' }], dir);
  delete held.proc;
  const { graceMs } = termination(ctx);
  const deadline = performance.now() + graceMs + (await bound(ctx, 5_000));
  while (await ctx.isAlive(leader, dir)) {
    if (performance.now() > deadline) {
      throw new ConformanceFailure('a Process dropped without disposal kept its command running after garbage collection');
    }
    gc();
    await ctx.sleep(50);
  }
}

async function exposeGc(): Promise<() => void> {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing) return existing;
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

