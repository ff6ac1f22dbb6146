/**
 * The kit's process tree run as a background command (spec 13), for the
 * cases of background commands, attach and reconnect: starting it, checking
 * it runs on, and ending a command by id once a case is done with it.
 */
import type { BackgroundProcess } from '@sandstream/types';
import { check, ConformanceFailure, describeError } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import type { AttachCalls } from './background.js';
import type { Watched } from './observe.js';
import { startedOnEvidence } from './started-evidence.js';
import { heartbeatBeats, startTree, watchTree, type Tree } from './tree.js';

/** Ends a background command by id (attach, then dispose), best effort: cleanup after a failed check. */
export async function endById(calls: AttachCalls, id: string | undefined): Promise<void> {
  if (id === undefined) return;
  try {
    const proc = await calls.attach(id, { replay: false });
    await proc[Symbol.asyncDispose]();
  } catch {
    // Gone already, or the failure under test.
  }
}

/** Starts the kit's process tree as a background command, whose pids the case watches. */
export async function startBackgroundTree(ctx: CaseContext): Promise<{ tree: Tree; proc: BackgroundProcess; processes: Watched[] }> {
  const tree = await startTree(ctx, { background: true });
  const proc = tree.proc as BackgroundProcess;
  try {
    await startedOnEvidence(ctx, proc, tree.argv);
  } catch (error) {
    if (error instanceof ConformanceFailure) throw error;
    throw new ConformanceFailure(`started() of a background command rejected with ${describeError(error)}`);
  }
  return { tree, proc, processes: await watchTree(ctx, tree) };
}

/** Fails unless every process of the tree is alive and its heartbeat beats: the command runs on. */
export async function expectRunning(ctx: CaseContext, tree: Tree, processes: readonly Watched[], what: string): Promise<void> {
  for (const watched of processes) {
    check(await ctx.isAlive(watched.pid, tree.dir), `${what}, the command must run on: ${watched.role} (pid ${watched.pid}) is gone`);
  }
  check(await heartbeatBeats(ctx, tree.dir), `${what}, the command must run on: its heartbeat has stopped`);
}
