import { TransportError, type BackgroundProcess, type Sandbox, type StreamName } from '@sandstream/types';
import { check, ConformanceFailure, describeError, HarnessError } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { endById } from './support/background-tree.js';
import {
  attachCalls,
  burstCommand,
  checkEnding,
  checkReplay,
  declaredReplay,
  disposeAll,
  drain,
  listed,
  listedIds,
  Reader,
  SMALL_BURSTS,
  startBackground,
  startCount,
  trigger,
  untilBurst1,
  type AttachCalls,
  type BurstCommand,
} from './support/background.js';
import { bound } from './support/observe.js';

/** A second handle on the case's environment, from the adapter module's attach hook. */
async function reconnect(ctx: CaseContext): Promise<Sandbox> {
  if (ctx.attach === undefined) {
    throw new HarnessError('the adapter declares "attach-reconnect": export `conformanceHooks.attach`, a new handle on the same environment, so the kit can reconnect');
  }
  try {
    return await ctx.attach(ctx.sandbox);
  } catch (error) {
    throw new HarnessError(`the adapter module's attach hook failed: ${describeError(error)}`);
  }
}

/** Reads `proc` until each stream holds what the command wrote before burst 1's end; D = T[s..first] is then checked by the caller. */
async function readBurst1(ctx: CaseContext, proc: BackgroundProcess, command: BurstCommand, what: string): Promise<Reader> {
  const skipped = proc.skipped;
  const want = (stream: StreamName): number => command.first[stream] - (skipped?.[stream] ?? 0);
  const reader = new Reader(ctx, proc, command);
  await reader.until(() => reader.counts.stdout >= want('stdout') && reader.counts.stderr >= want('stderr'), what);
  return reader;
}

/** Waits until the command's owner no longer lists it as running. */
async function untilNotRunning(ctx: CaseContext, calls: AttachCalls, id: string, what: string): Promise<void> {
  await ctx.poll(async () => ((await listed(calls, id))?.state === 'running' ? undefined : true), await bound(ctx, 10_000), what);
}

/** The cases of SS-RECON-*: a handle built from the environment's id alone (spec 1.2). */
export const reconnectCases = [
  defineCase({
    id: 'attach.reconnect',
    title: '"A handle built from the environment\'s id MUST list and attach to the background commands other handles started": its close() ends only the attached Processes it holds undetached',
    requirements: ['SS-RECON-1', 'SS-START-3'],
    needs: ['streaming', 'attach', 'attach-reconnect'],
    async run(ctx) {
      const calls = attachCalls(ctx.sandbox);
      const command = await burstCommand(ctx, SMALL_BURSTS);
      const starter = await startBackground(ctx, command.argv);
      const id = starter.commandId!;
      const handles: Sandbox[] = [];
      const procs: BackgroundProcess[] = [];
      try {
        await starter.detach();
        await untilBurst1(ctx, command, calls, id);
        // A second handle lists it and replays burst 1 exactly, detaches, and closes: the command runs on.
        const second = await reconnect(ctx);
        handles.push(second);
        const secondCalls = attachCalls(second);
        const info = await listed(secondCalls, id);
        check(info?.state === 'running', `a handle built from the environment's id does not list ${id} as running, a command another handle started (it lists ${await listedIds(secondCalls)})`);
        check(JSON.stringify(info?.argv) === JSON.stringify(command.argv), `a handle built from the environment's id lists ${id} with the argv ${JSON.stringify(info?.argv)}`);
        const watched = await secondCalls.attach(id);
        procs.push(watched);
        const skipped = watched.skipped;
        const burst1 = (await readBurst1(ctx, watched, command, `attach() from a handle built from the environment's id`)).read();
        const mode = declaredReplay(ctx.sandbox);
        for (const stream of ['stdout', 'stderr'] as const) {
          const whole = command.expected[stream].subarray(0, command.first[stream]);
          const from = skipped?.[stream] ?? whole.byteLength - burst1[stream].byteLength;
          check(Buffer.compare(burst1[stream], whole.subarray(from)) === 0, `attach() from a handle built from the environment's id, ${stream}: the replay of burst 1 is not its bytes from offset ${from}, every byte once and in order`);
          if (mode === 'full') check(skipped?.[stream] === 0, `attach() from a new handle under replay-full, ${stream}: skipped must be 0, got ${skipped?.[stream]}`);
        }
        await watched.detach();
        await second.close();
        check((await listed(calls, id))?.state === 'running', `close() of a handle that only attached to ${id}, and detached, ended it: only its owner's close() ends a command it does not read`);
        // A third handle holds an attached Process undetached and closes: that ends the command.
        const third = await reconnect(ctx);
        handles.push(third);
        const held = await attachCalls(third).attach(id, { replay: false });
        procs.push(held);
        await held.started();
        await third.close();
        check(held.exited, `close() of a handle resolved while a Process it holds attached, not detached, still runs (exited is false)`);
        await untilNotRunning(ctx, calls, id, `close() of a handle holding an undetached attached Process resolved, but the owner still lists ${id} as running`);
        const starts = await startCount(ctx, command);
        check(starts === 1, `the command was started ${starts} times (its start counter holds ${starts} lines); listing and attaching from other handles must never start it again`);
      } finally {
        await disposeAll(procs);
        await Promise.allSettled(handles.map((handle) => handle.close()));
        await endById(calls, id);
      }
    },
  }),
  defineCase({
    id: 'attach.link-lost',
    title: '"A broken link to a running background command MUST be re-established with every byte delivered once": or the Process rejects with TransportError carrying the commandId and the command runs on',
    requirements: ['SS-RECON-2', 'SS-START-3'],
    needs: ['streaming', 'attach', 'attach-reconnect'],
    async run(ctx) {
      if (ctx.sever === undefined) {
        throw new HarnessError('the adapter declares "attach-reconnect": export `conformanceHooks.sever`, which cuts the connections to a background command as a proxy would, so the kit can check the reconnect');
      }
      const calls = attachCalls(ctx.sandbox);
      const command = await burstCommand(ctx, SMALL_BURSTS);
      const starter = await startBackground(ctx, command.argv);
      const id = starter.commandId!;
      const procs: BackgroundProcess[] = [];
      try {
        await starter.detach();
        await untilBurst1(ctx, command, calls, id);
        const proc = await calls.attach(id);
        procs.push(proc);
        const skipped = proc.skipped;
        const reader = await readBurst1(ctx, proc, command, 'attach() before the link was cut');
        const cut = await ctx.sever(proc);
        if (cut === 0) throw new HarnessError(`the sever hook cut no link to the background command ${id}, which a Process of this handle reads: nothing would be tested`);
        await trigger(ctx, command);
        let delivered: Record<StreamName, Uint8Array> | undefined;
        let failure: unknown;
        try {
          delivered = await reader.rest('a Process whose link was cut');
        } catch (error) {
          if (error instanceof ConformanceFailure) throw error;
          failure = error;
        }
        if (delivered !== undefined) {
          // Re-established: what came before and after the cut is each stream exactly, once.
          for (const stream of ['stdout', 'stderr'] as const) checkReplay(stream, delivered[stream], skipped, command, declaredReplay(ctx.sandbox), command.first[stream], 'a Process whose link was cut and re-established');
          checkEnding(await proc.wait(), 0, 'wait() of a Process whose link was cut and re-established');
        } else {
          check(failure instanceof TransportError, `a Process whose link was cut must re-establish it or reject with TransportError; it rejected with ${describeError(failure)}`);
          check((failure as TransportError).commandId === id, `the TransportError of a cut link must carry the commandId ${id}, so the caller can attach again; it carries ${(failure as TransportError).commandId}`);
          // The command ran on: attached again, it gives its whole output and its own end.
          const again = await calls.attach(id);
          procs.push(again);
          const all = await drain(ctx, again, command, 'attach() after a cut link failed its Process');
          for (const stream of ['stdout', 'stderr'] as const) checkReplay(stream, all[stream], again.skipped, command, declaredReplay(ctx.sandbox), command.expected[stream].byteLength, 'attach() after a cut link failed its Process');
          checkEnding(await again.wait(), 0, 'wait() of the command whose link was cut (it must run on)');
        }
        const starts = await startCount(ctx, command);
        check(starts === 1, `the command was started ${starts} times (its start counter holds ${starts} lines); re-establishing a link must never start it again`);
      } finally {
        await disposeAll(procs);
        await endById(calls, id);
      }
    },
  }),
];
