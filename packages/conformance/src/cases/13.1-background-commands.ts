import type { BackgroundProcess, StreamOptions } from '@sandstream/types';
import { hasCapability } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, ConformanceFailure, describeError, HarnessError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { helperExec } from '../context.js';
import { probeAlive } from '../sandbox-scripts.js';
import { attachCalls, expectUnlisted, listed, listedIds, startBackground, withWitness } from './support/background.js';
import { bound, deliveryBound, expectNeverRan, explainingSurvivors, readPid, scratch, settledWithin } from './support/observe.js';
import { expectTreeGone } from './support/tree.js';
import { endById, expectRunning, startBackgroundTree } from './support/background-tree.js';
import { environmentGone, openObserver } from './support/observer.js';

/** A command that runs until it is ended, its argv carrying `label`. */
function forever(label: string): string[] {
  return ['sh', '-c', 'while :; do sleep 0.05; done', 'sh', label];
}

/** Settles `promise` within the delivery bound, or fails saying what did not happen at once. */
async function atOnce<T>(ctx: CaseContext, promise: Promise<T>, what: string): Promise<T> {
  const within = await deliveryBound(ctx);
  const outcome = await settledWithin(promise, within);
  if (outcome === 'pending') throw new ConformanceFailure(`${what} did not settle within ${within} ms; it must at once`);
  if (outcome.rejected) throw new ConformanceFailure(`${what} rejected with ${describeError(outcome.reason)}`);
  return outcome.value;
}

/** Background commands: SS-BG-*. */
export const backgroundCases = [
  defineCase({
    id: 'background.listed',
    title: '"A background command\'s commandId MUST name it, and only it, in attach() and commands() while its record is kept": detached or not',
    requirements: ['SS-BG-1'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const calls = attachCalls(ctx.sandbox);
      const token = ctx.token('listed');
      const argv = [forever(`${token}-1`), forever(`${token}-2`)];
      const ids: Array<string | undefined> = [];
      try {
        const procs = [await startBackground(ctx, argv[0]!), await startBackground(ctx, argv[1]!)];
        ids.push(procs[0]!.commandId, procs[1]!.commandId);
        check(ids[0] !== ids[1], `two background commands have the same commandId ${JSON.stringify(ids[0])}`);
        for (const [i, id] of ids.entries()) {
          const info = await listed(calls, id!);
          check(info !== undefined, `commands() does not list the running background command ${id}; it lists ${await listedIds(calls)}`);
          checkEqual(info.argv, argv[i], `the argv commands() lists for ${id}`);
          check(info.state === 'running', `commands() lists the running command ${id} as ${JSON.stringify(info.state)}, expected "running"`);
        }
        await procs[0]!.detach();
        const after = await listed(calls, ids[0]!);
        check(after !== undefined, `once detach() resolved, commands() no longer lists the command ${ids[0]}, which still runs (its record is kept until it is killed or its owner closes); it lists ${await listedIds(calls)}`);
        check(after.state === 'running', `commands() lists the detached, running command ${ids[0]} as ${JSON.stringify(after.state)}, expected "running"`);
        for (const [i, id] of ids.entries()) {
          const view = await calls.attach(id!, { replay: false });
          try {
            check(view.commandId === id, `attach(${JSON.stringify(id)}) gave a Process whose commandId is ${JSON.stringify(view.commandId)}`);
            checkEqual(view.argv, argv[i], `the argv of the Process attach(${JSON.stringify(id)}) gave`);
          } finally {
            await view.detach();
          }
        }
        // Only background commands are attachable (ADR-0036).
        await using foreground = ctx.sandbox.stream(forever(`${token}-fg`));
        await foreground.started();
        const fid = foreground.commandId;
        if (fid !== undefined && !ids.includes(fid)) {
          const error = await rejectionOf(calls.attach(fid, { replay: false }), "attach() by a foreground command's commandId");
          checkErrorCode(error, 'COMMAND_NOT_FOUND', "attach() by a foreground command's commandId");
        }
      } finally {
        for (const id of ids) await endById(calls, id);
      }
    },
  }),
  defineCase({
    id: 'background.detach',
    title: '"Disposing a background Process MUST terminate the command unless detach() was called": detach() leaves it running and releases the Process',
    requirements: ['SS-BG-2'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const calls = attachCalls(ctx.sandbox);
      const kept = await startBackgroundTree(ctx);
      const id = kept.proc.commandId;
      try {
        await kept.proc.detach();
        await expectRunning(ctx, kept.tree, kept.processes, 'once detach() resolved');
        checkErrorCode(await rejectionOf(kept.proc.wait(), 'wait() after detach()'), 'INVALID_STATE', 'wait() after detach()');
        checkErrorCode(await rejectionOf(kept.proc.kill(), 'kill() after detach()'), 'INVALID_STATE', 'kill() after detach()');
        const count = await atOnce(ctx, (async () => {
          let n = 0;
          for await (const chunk of kept.proc) n += chunk.data.byteLength;
          return n;
        })(), 'iterating a detached Process');
        check(count === 0, `a detached Process delivered ${count} bytes; detach() discards unread output and iteration ends`);
        await atOnce(ctx, kept.proc[Symbol.asyncDispose](), 'disposing a detached Process');
        await expectRunning(ctx, kept.tree, kept.processes, 'once a detached Process was disposed');
        const info = await listed(calls, id!);
        check(info?.state === 'running', `commands() lists the detached command as ${JSON.stringify(info?.state)}, expected "running"; it lists ${await listedIds(calls)}`);
      } finally {
        await endById(calls, id);
      }

      await withWitness(ctx, calls, async (witness) => {
        const ended = await startBackgroundTree(ctx);
        const endedId = ended.proc.commandId!;
        await explainingSurvivors(ctx, ended.processes, ended.tree.dir, 'disposing an undetached background Process', () => ended.proc[Symbol.asyncDispose]());
        check(ended.proc.exited, 'disposing a background Process that was not detached resolved while its command still runs (exited is false)');
        await expectTreeGone(ctx, ended.tree, ended.processes, 'when disposing an undetached background Process resolved');
        await expectUnlisted(calls, endedId, witness, 'once its undetached Process was disposed');
      });
    },
  }),
  defineCase({
    id: 'background.close',
    title: '"Sandbox.close() MUST terminate every background command the sandbox started, detached or not, before it resolves": no handle lists it after',
    requirements: ['SS-BG-3'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      // As teardown.close (ADR-0011): an observer looks at the environment after close().
      const calls = attachCalls(ctx.sandbox);
      const token = ctx.token('bg-close');
      const dir = await scratch(ctx);
      const argv = (n: number): string[] => ['sh', '-c', 'echo $$ > "$1"; while :; do sleep 0.05; done', 'sh', `${dir}/pid-${n}`, token];
      const observer = await openObserver(ctx);
      try {
        const detached = await startBackground(ctx, argv(1));
        await detached.detach();
        const held = await startBackground(ctx, argv(2));
        const attached = await calls.attach(held.commandId!, { replay: false });
        const ids = [detached.commandId!, held.commandId!];
        const pids = [await readPid(ctx, `${dir}/pid-1`, 'a detached background command'), await readPid(ctx, `${dir}/pid-2`, 'a background command')];
        const look = helperExec(observer.sandbox, ctx.signal);
        for (const [i, pid] of pids.entries()) {
          if (await probeAlive(look, pid, token)) continue;
          // The case's own sandbox first: a command that is gone there is the adapter's failure, not the observer's.
          check(await ctx.isAlive(pid, token), `pid ${pid}, a ${i === 0 ? 'detached ' : ''}background command, ended before close() was called, though nothing ended it`);
          throw new HarnessError(
            `the observer (${observer.attached ? 'from the attach hook' : 'a second sandbox'}) does not see pid ${pid}, a running background command of the case's sandbox, ` +
              'so it cannot show that close() ended it; export `conformanceHooks.attach` from the adapter module',
          );
        }
        await ctx.sandbox.close();
        check(held.exited && attached.exited, 'close() resolved while an undetached background Process still runs (exited is false)');
        const gone = await environmentGone(observer, token);
        if (!gone) {
          for (const [i, pid] of pids.entries()) {
            check(!(await probeAlive(look, pid, token)), `close() resolved while pid ${pid}, a ${i === 0 ? 'detached ' : ''}background command it started, still runs`);
          }
        }
        let list: readonly { commandId: string }[] = [];
        try {
          list = await calls.commands();
        } catch (error) {
          checkErrorCode(error, 'SANDBOX_CLOSED', 'commands() of a closed sandbox');
        }
        check(!list.some((info) => ids.includes(info.commandId)), `commands() of the closed sandbox still lists ${JSON.stringify(list)}`);
        const error = await rejectionOf(calls.attach(ids[0]!), 'attach() on a closed sandbox');
        check(['SANDBOX_CLOSED', 'COMMAND_NOT_FOUND'].includes(String((error as { code?: unknown }).code)), `attach() on a closed sandbox: expected SandboxClosed or CommandNotFound, got ${describeError(error)}`);
        const other = observer.sandbox;
        // An environment that close() destroyed (the adapter owned it) lists nothing to anyone.
        if (!gone && observer.attached && hasCapability(other.capabilities, 'attach-reconnect') && typeof other.commands === 'function') {
          const seen = await other.commands();
          check(!seen.some((info) => ids.includes(info.commandId)), `after close() of their owner, the attach hook's handle still lists ${JSON.stringify(seen)}`);
        }
      } finally {
        await observer.sandbox.run(['rm', '-rf', dir], { timeout: 10_000 }).catch(() => undefined);
        await observer.sandbox.close().catch(() => undefined);
      }
    },
  }),
  defineCase({
    id: 'background.options',
    title: '"MUST be rejected with InvalidArgument whose key is options.background, before any side effect": background with timeout, signal, stdin: "pipe" or input',
    requirements: ['SS-BG-4'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const combos: Array<[string, StreamOptions]> = [
        ['timeout', { timeout: await bound(ctx, 60_000) }],
        ['signal', { signal: new AbortController().signal }],
      ];
      // Standard input is refused for its own capability where there is none.
      if (hasCapability(ctx.sandbox.capabilities, 'stdin')) combos.push(['stdin', { stdin: 'pipe' }], ['input', { input: 'data' }]);
      for (const [name, options] of combos) {
        const what = `stream() with background: true and ${name}`;
        const argv = ['sh', '-c', 'touch "$1"', 'sh', `${dir}/${name}`];
        let error: unknown;
        let returned: BackgroundProcess | undefined;
        try {
          returned = ctx.sandbox.stream(argv, { ...options, background: true });
        } catch (thrown) {
          error = thrown;
        }
        if (returned !== undefined) {
          await returned[Symbol.asyncDispose]().catch(() => undefined);
          throw new ConformanceFailure(`${what} must throw InvalidArgument (options.background) before any side effect; it returned a Process`);
        }
        checkErrorCode(error, 'INVALID_ARGUMENT', what);
        const key = (error as { key?: unknown }).key;
        check(key === 'options.background', `${what}: the InvalidArgument names ${JSON.stringify(key)}, expected "options.background"`);
        await expectNeverRan(ctx, `${dir}/${name}`, `${what} ran the command although it was refused`, {
          path: `${dir}/${name}-later`,
          run: () => ctx.sandbox.run(['sh', '-c', 'touch "$1"', 'sh', `${dir}/${name}-later`]),
        });
      }
    },
  }),
];
