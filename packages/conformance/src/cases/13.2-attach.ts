import type { BackgroundProcess, StreamName } from '@sandstream/types';
import { check, checkErrorCode, ConformanceFailure, describeError, HarnessError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { endById, expectRunning, startBackgroundTree } from './support/background-tree.js';
import {
  attachCalls,
  burstCommand,
  checkEnding,
  checkReplay,
  declaredReplay,
  disposeAll,
  drain,
  expectUnlisted,
  listed,
  listedIds,
  Reader,
  SMALL_BURSTS,
  startBackground,
  startCount,
  TAIL_BURSTS,
  trigger,
  untilBurst1,
  withWitness,
  type AttachCalls,
  type BurstCommand,
  type Bursts,
  type Ending,
  type ReplayMode,
} from './support/background.js';
import { bound, explainingSurvivors, readMarker } from './support/observe.js';
import { carrying } from './support/token-scan.js';
import { expectTreeGone } from './support/tree.js';

type Skipped = BackgroundProcess['skipped'];

/** D = T[s..] on both streams, `skipped` as read once attach() resolved; it must not change while the Process is read. */
function checkBoth(delivered: Record<StreamName, Uint8Array>, proc: BackgroundProcess, skipped: Skipped, command: BurstCommand, mode: ReplayMode, written: (stream: StreamName) => number, what: string): void {
  const now = proc.skipped;
  check(JSON.stringify(now) === JSON.stringify(skipped), `${what}: skipped changed while the Process was read, from ${JSON.stringify(skipped)} to ${JSON.stringify(now)}`);
  for (const stream of ['stdout', 'stderr'] as const) checkReplay(stream, delivered[stream], skipped, command, mode, written(stream), what);
}

/** Burst 1, a default attach, burst 2: the replay as the manifest declares it (ATTACH-3, ATTACH-4). */
async function replayCase(ctx: CaseContext, mode: 'full' | 'tail', bursts: Bursts): Promise<void> {
  const calls = attachCalls(ctx.sandbox);
  const command = await burstCommand(ctx, bursts);
  const starter = await startBackground(ctx, command.argv);
  const id = starter.commandId!;
  let proc: BackgroundProcess | undefined;
  try {
    await starter.detach();
    await untilBurst1(ctx, command, calls, id);
    proc = await calls.attach(id);
    const skipped = proc.skipped;
    await trigger(ctx, command);
    const delivered = await drain(ctx, proc, command, `attach() under replay-${mode}`);
    checkBoth(delivered, proc, skipped, command, mode, (stream) => command.first[stream], `attach() under replay-${mode}`);
    checkEnding(await proc.wait(), 0, 'wait() of the attached Process');
  } finally {
    await disposeAll([proc]);
    await endById(calls, id);
  }
}

/** Waits until commands() lists the command as ended, once it created its `ending` marker; an ended command stays listed. */
async function untilEnded(ctx: CaseContext, calls: AttachCalls, command: BurstCommand, id: string): Promise<void> {
  await ctx.poll(async () => readMarker(ctx, `${command.dir}/ending`), await bound(ctx, 10_000), `the background command never got to its end (it creates ${command.dir}/ending right before)`);
  const within = await bound(ctx, 5_000);
  await ctx.poll(
    async () => {
      const info = await listed(calls, id);
      if (info === undefined) {
        throw new ConformanceFailure(`commands() stopped listing the command ${id} once it ended; an ended command stays listed, as "ended", until it is forgotten or its owner closes (it lists ${await listedIds(calls)})`);
      }
      return info.state === 'ended' ? true : undefined;
    },
    within,
    `the command ended (it created ${command.dir}/ending right before), but commands() still lists it as running`,
  );
}

/** One run of attach.ended: the command ends by `ending`, then is attached, read, attached again, and forgotten. */
async function endedRun(ctx: CaseContext, calls: AttachCalls, ending: Ending, witness: string): Promise<void> {
  const command = await burstCommand(ctx, SMALL_BURSTS, ending);
  const starter = await startBackground(ctx, command.argv);
  const id = starter.commandId!;
  const procs: BackgroundProcess[] = [];
  const how = ending === 'term' ? 'a command that died by SIGTERM' : `a command that exited ${ending}`;
  try {
    await starter.detach();
    await untilBurst1(ctx, command, calls, id);
    await trigger(ctx, command);
    await untilEnded(ctx, calls, command, id);
    const proc = await calls.attach(id);
    procs.push(proc);
    const skipped = proc.skipped;
    const delivered = await drain(ctx, proc, command, `attach() of ${how}`);
    // Ended by itself: nothing was sent to it (a backend's record may settle only once replayed).
    const settledByItself = proc.exited;
    const result = await proc.wait();
    const again = await calls.attach(id, { replay: false });
    procs.push(again);
    const second = await again.wait();
    await again.detach();
    await calls.commands();
    const starts = await startCount(ctx, command);
    check(starts === 1, `${how} was started ${starts} times (its start counter holds ${starts} lines); attaching to it, listing and detaching must never start it again`);
    check(settledByItself, `attach() of ${how} must give a Process that ends by itself once its replay is delivered; its exited was false after the end of its output`);
    checkEnding(result, ending, `wait() of a Process attached to ${how}`);
    checkEnding(second, ending, `wait() of a second Process attached to ${how} with { replay: false }`);
    checkBoth(delivered, proc, skipped, command, declaredReplay(ctx.sandbox), (stream) => command.expected[stream].byteLength, `attach() of ${how}`);
    for (const p of procs) await p[Symbol.asyncDispose]();
    await expectUnlisted(calls, id, witness, `once the Process attached to ${how} was disposed (disposal forgets an ended command)`);
    checkErrorCode(await rejectionOf(calls.attach(id), `attach() of ${how}, forgotten`), 'COMMAND_NOT_FOUND', `attach() of ${how} whose attached Process was disposed`);
  } finally {
    await disposeAll(procs);
    await endById(calls, id);
  }
}

/** attach.dispose, first part: disposing one of two undetached attached Processes ends the command and unlists it. */
async function disposedEnds(ctx: CaseContext, calls: AttachCalls, witness: string): Promise<void> {
  const ended = await startBackgroundTree(ctx);
  const endedId = ended.proc.commandId!;
  const views: BackgroundProcess[] = [];
  try {
    await ended.proc.detach();
    views.push(await calls.attach(endedId, { replay: false }), await calls.attach(endedId, { replay: false }));
    await explainingSurvivors(ctx, ended.processes, ended.tree.dir, 'disposing an attached Process', () => views[0]![Symbol.asyncDispose]());
    check(views[0]!.exited, 'disposing an attached Process that was not detached resolved while the command still runs (exited is false)');
    await expectTreeGone(ctx, ended.tree, ended.processes, 'when disposing an attached, undetached Process resolved');
    check(views[1]!.exited, 'another Process attached to a command that a disposal ended does not report it exited');
    await expectUnlisted(calls, endedId, witness, 'once an attached Process of it was disposed');
    checkErrorCode(await rejectionOf(calls.attach(endedId), 'attach() after disposal'), 'COMMAND_NOT_FOUND', 'attach() of a command whose attached Process was disposed');
  } finally {
    await disposeAll(views);
    await endById(calls, endedId);
  }
}

/** Attaching: SS-ATTACH-*. (SS-RECON-1, SS-RECON-2 and the link-lost part of SS-START-3 need `attach-reconnect` on a remote adapter: not here yet.) */
export const attachCases = [
  defineCase({
    id: 'attach.unknown',
    title: '"An id that names no background command MUST make attach() reject with CommandNotFound before any side effect": nothing starts, nothing is listed',
    requirements: ['SS-ATTACH-1'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const calls = attachCalls(ctx.sandbox);
      const token = ctx.token('unknown');
      // A command the scan and commands() must see, so that what they do not see means something.
      const probe = await startBackground(ctx, ['sh', '-c', 'while :; do sleep 0.05; done', 'sh', `${token}-probe`]);
      try {
        const scanned = await carrying(ctx, `${token}-probe`);
        if (scanned !== undefined && scanned.length === 0) {
          throw new HarnessError(`a scan of /proc does not see the running command carrying ${token}-probe, so it cannot show that nothing else started`);
        }
        const ids = [`${token}-unknown`, `${token}-unknown-${'0'.repeat(8)}`];
        for (const id of ids) {
          for (const options of [undefined, { replay: false }]) {
            const what = `attach(${JSON.stringify(id)}${options === undefined ? '' : ', { replay: false }'}) of an id no background command has`;
            let proc: BackgroundProcess | undefined;
            let error: unknown;
            try {
              proc = await calls.attach(id, options);
            } catch (thrown) {
              error = thrown;
            }
            if (proc !== undefined) {
              const argv = JSON.stringify(proc.argv);
              await proc[Symbol.asyncDispose]().catch(() => undefined);
              throw new ConformanceFailure(`${what} must reject with CommandNotFound; it resolved with a Process (argv ${argv})`);
            }
            checkErrorCode(error, 'COMMAND_NOT_FOUND', what);
            const named = (error as { commandId?: unknown }).commandId;
            check(named === id, `${what}: the CommandNotFound names ${JSON.stringify(named)}, expected ${JSON.stringify(id)}`);
          }
        }
        const started = await carrying(ctx, `${token}-unknown`);
        check(started === undefined || started.length === 0, `attach() of unknown ids started something: pid ${started?.join(', ')} carries an id that was looked up`);
        const list = await calls.commands();
        check(list.some((info) => info.commandId === probe.commandId), `commands() does not list the running background command ${probe.commandId}; it lists ${await listedIds(calls)}`);
        const unknown = list.filter((info) => info.commandId.includes(`${token}-unknown`) || info.argv.some((arg) => arg.includes(`${token}-unknown`)));
        check(unknown.length === 0, `after attach() of unknown ids, commands() lists ${JSON.stringify(unknown)}`);
      } finally {
        await probe[Symbol.asyncDispose]().catch(() => undefined);
      }
    },
  }),
  defineCase({
    id: 'attach.follow',
    title: '"An attached Process MUST deliver each stream from skipped on, every byte once and in order": including all written after attach() resolved; { replay: false } delivers only what follows',
    requirements: ['SS-ATTACH-2'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const calls = attachCalls(ctx.sandbox);
      const command = await burstCommand(ctx, SMALL_BURSTS);
      const starter = await startBackground(ctx, command.argv);
      const id = starter.commandId!;
      const procs: BackgroundProcess[] = [starter];
      try {
        // Once the starter has all of burst 1, so has the adapter: a { replay: false } attach begins after it, without a race.
        const reader = new Reader(ctx, starter, command);
        await reader.until(() => reader.counts.stdout >= command.first.stdout && reader.counts.stderr >= command.first.stderr, 'the starting Process, reading burst 1');
        const follower = await calls.attach(id, { replay: false });
        procs.push(follower);
        const followerSkipped = follower.skipped;
        const replayed = await calls.attach(id);
        procs.push(replayed);
        const replayedSkipped = replayed.skipped;
        await trigger(ctx, command);
        const [followed, again] = await Promise.all([drain(ctx, follower, command, 'attach() with { replay: false }'), drain(ctx, replayed, command, 'attach()')]);
        const started = await reader.rest();
        const first = (stream: StreamName): number => command.first[stream];
        for (const stream of ['stdout', 'stderr'] as const) {
          checkReplay(stream, started[stream], starter.skipped ?? { stdout: 0, stderr: 0 }, command, 'full', first(stream), 'the Process that started the command');
        }
        checkBoth(followed, follower, followerSkipped, command, 'follow', first, 'attach() with { replay: false }');
        checkBoth(again, replayed, replayedSkipped, command, declaredReplay(ctx.sandbox), first, 'attach() with the default replay');
        for (const [i, proc] of procs.entries()) checkEnding(await proc.wait(), 0, `wait() of ${['the starting Process', 'the following Process', 'the replaying Process'][i]}`);
      } finally {
        await disposeAll(procs);
        await endById(calls, id);
      }
    },
  }),
  defineCase({
    id: 'attach.replay-full',
    title: '"With replay-full, attaching MUST replay each stream from its first byte": skipped is 0',
    requirements: ['SS-ATTACH-3'],
    needs: ['streaming', 'attach', 'replay-full'],
    runsAlone: 'it moves 3 MiB through a replay, which would starve the timing checks of cases beside it',
    timeoutMs: 60_000,
    run: (ctx) => replayCase(ctx, 'full', TAIL_BURSTS),
  }),
  defineCase({
    id: 'attach.replay-tail',
    title: '"With replay-tail, attaching MUST replay at least the last min(written, 1 MiB) bytes of each stream written before it": and skipped counts the rest exactly',
    requirements: ['SS-ATTACH-4'],
    needs: ['streaming', 'attach', 'replay-tail'],
    runsAlone: 'it moves 3 MiB through a replay, which would starve the timing checks of cases beside it',
    timeoutMs: 60_000,
    run: (ctx) => replayCase(ctx, 'tail', TAIL_BURSTS),
  }),
  defineCase({
    id: 'attach.ended',
    title: '"Attaching to a command that has ended MUST give a Process that ends by itself, with nothing sent to it": its replay, then the end, and its exact result; attaching, listing and detaching never start it again',
    requirements: ['SS-ATTACH-5', 'SS-START-3'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const calls = attachCalls(ctx.sandbox);
      await withWitness(ctx, calls, async (witness) => {
        await endedRun(ctx, calls, 3, witness);
        await endedRun(ctx, calls, 'term', witness);
      });
    },
  }),
  defineCase({
    id: 'attach.dispose',
    title: '"Disposing an attached Process MUST terminate its command": and unlists it, unless detached; detached, it runs on and stays listed',
    requirements: ['SS-ATTACH-6'],
    needs: ['streaming', 'attach'],
    async run(ctx) {
      const calls = attachCalls(ctx.sandbox);
      await withWitness(ctx, calls, (witness) => disposedEnds(ctx, calls, witness));
      const kept = await startBackgroundTree(ctx);
      const keptId = kept.proc.commandId!;
      try {
        await kept.proc.detach();
        const view = await calls.attach(keptId, { replay: false });
        await view.detach();
        await view[Symbol.asyncDispose]();
        await expectRunning(ctx, kept.tree, kept.processes, 'once an attached Process was detached, then disposed');
        const info = await listed(calls, keptId);
        check(info?.state === 'running', `after an attached Process was detached and disposed, commands() lists the command as ${JSON.stringify(info?.state)}, expected "running"; it lists ${await listedIds(calls)}`);
      } catch (error) {
        if (error instanceof ConformanceFailure || error instanceof HarnessError) throw error;
        throw new ConformanceFailure(`detaching and disposing an attached Process failed: ${describeError(error)}`);
      } finally {
        await endById(calls, keptId);
      }
    },
  }),
];
