import type { BackgroundProcess, StreamOptions } from '@sandstream/types';
import { hasCapability } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, ConformanceFailure, describeError, HarnessError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { helperExec } from '../context.js';
import { probeAlive } from '../sandbox-scripts.js';
import { attachCalls, disposeAll, expectUnlisted, listed, listedIds, startBackground, withWitness } from './support/background.js';
import { bound, expectNeverRan, explainingSurvivors, readPid, scratch } from './support/observe.js';
import { atOnce, rejectsAtOnce } from './support/at-once.js';
import { expectTreeGone } from './support/tree.js';
import { endById, expectRunning, startBackgroundTree } from './support/background-tree.js';
import { environmentGone, openObserver } from './support/observer.js';

/** A command that runs until it is ended, its argv carrying `label`. */
function forever(label: string): string[] {
  return ['sh', '-c', 'while :; do sleep 0.05; done', 'sh', label];
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
    id: 'background.listed-only',
    title: '"A background command\'s commandId MUST name it, and only it, in attach() and commands() while its record is kept": commands() lists background commands, ended ones too, each once, and no foreground command nor another sandbox\'s',
    requirements: ['SS-BG-1'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const calls = attachCalls(ctx.sandbox);
      const token = ctx.token('only');
      // With attach-reconnect a second sandbox may be a handle of the same environment, which lists what the first started (SS-RECON-1).
      const separate = !hasCapability(ctx.sandbox.capabilities, 'attach-reconnect');
      const other = separate ? await ctx.factory() : undefined;
      const procs: BackgroundProcess[] = [];
      try {
        const running = await startBackground(ctx, forever(`${token}-running`));
        procs.push(running);
        const ended = await startBackground(ctx, ['sh', '-c', 'exit 0', 'sh', `${token}-ended`]);
        procs.push(ended);
        const result = await ended.wait();
        check(result.exitCode === 0, `a background command that exits 0 ended with exit ${result.exitCode}, signal ${result.signal}`);
        const ran = await ctx.sandbox.run(['sh', '-c', 'exit 0', 'sh', `${token}-ran`]);
        check(ran.exitCode === 0, `a foreground command that exits 0 ended with exit ${ran.exitCode}`);
        await using foreground = ctx.sandbox.stream(forever(`${token}-foreground`));
        await foreground.started();
        let elsewhere: BackgroundProcess | undefined;
        if (other !== undefined) {
          elsewhere = other.stream(forever(`${token}-elsewhere`), { background: true });
          await elsewhere.started();
        }
        // The ended command stays listed; a backend that learns of the end later gets a bound to show it.
        const list = await ctx.poll(
          async () => {
            const now = await calls.commands();
            return now.find((info) => info.commandId === ended.commandId)?.state === 'ended' ? now : undefined;
          },
          await bound(ctx, 5_000),
          `the background command ${ended.commandId} exited, but commands() does not list it as "ended"; an ended command stays listed until it is forgotten or its owner closes`,
        );
        const shown = JSON.stringify(list.map((info) => `${info.commandId} (${info.state}) ${JSON.stringify(info.argv)}`));
        const ids = list.map((info) => info.commandId);
        const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
        check(twice.length === 0, `commands() lists ${JSON.stringify([...new Set(twice)])} more than once; a commandId names one command: ${shown}`);
        const info = list.find((entry) => entry.commandId === running.commandId);
        check(info?.state === 'running', `commands() lists the running background command ${running.commandId} as ${JSON.stringify(info?.state)}, expected "running": ${shown}`);
        checkEqual(list.find((entry) => entry.commandId === ended.commandId)?.argv, ended.argv, `the argv commands() lists for the ended command ${ended.commandId}`);
        const carries = (label: string): boolean => list.some((entry) => entry.argv.some((arg) => arg.includes(`${token}-${label}`)));
        const foreign: Array<[string, string | undefined, string]> = [
          ['foreground', foreground.commandId, 'a running foreground command'],
          ['ran', undefined, 'a foreground command run() ran to its end'],
          ['elsewhere', elsewhere?.commandId, "a background command of another sandbox of the adapter's factory"],
        ];
        for (const [label, id, what] of foreign) {
          const named = id !== undefined && ids.includes(id);
          check(!carries(label) && !named, `commands() lists ${what} (its argv carries ${token}-${label}); only the background commands this handle can attach to are listed: ${shown}`);
        }
        if (elsewhere?.commandId !== undefined) {
          const what = "attach() by the commandId of another sandbox's background command";
          checkErrorCode(await rejectionOf(calls.attach(elsewhere.commandId, { replay: false }), what), 'COMMAND_NOT_FOUND', what);
        }
      } finally {
        await disposeAll(procs);
        await other?.close().catch(() => undefined);
      }
    },
  }),
  defineCase({
    id: 'background.detach-failed-start',
    title: '"detach() MUST leave the command running, owned as before, and release the Process": on a background Process whose start failed, detach() waits for started() and rejects as it does',
    requirements: ['SS-BG-2'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const dir = await scratch(ctx);
      // Called before the start settles, detach() must wait for it; called after, it must still not resolve.
      for (const when of ['before', 'after'] as const) {
        const what = `detach() called ${when} started() of a background command that cannot start rejected`;
        let proc: BackgroundProcess;
        try {
          proc = ctx.sandbox.stream([`${dir}/sandstream-no-such-command`], { background: true });
        } catch (error) {
          throw new ConformanceFailure(`stream() with background: true of a command that cannot start threw ${describeError(error)}; its start fails through started() (section 6.1)`);
        }
        try {
          const early = when === 'before' ? proc.detach() : undefined;
          // Observed at once, so an early rejection is not reported as unhandled while started() settles.
          early?.catch(() => undefined);
          const startError = await rejectionOf(proc.started(), 'started() of a background command that cannot start');
          checkErrorCode(startError, 'SPAWN_FAILED', 'started() of a background command that cannot start');
          checkErrorCode(await rejectsAtOnce(ctx, early ?? proc.detach(), what), 'SPAWN_FAILED', what);
          await atOnce(ctx, proc[Symbol.asyncDispose](), `disposing a background Process whose start failed (detach() ${when})`);
        } finally {
          // Best effort after a failed check, which it must not hide.
          void proc[Symbol.asyncDispose]().catch(() => undefined);
        }
      }
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
