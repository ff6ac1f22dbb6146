import type { Process, StreamOptions } from '@sandstream/types';
import { ConformanceFailure } from '../assert.js';
import type { CaseContext } from '../context.js';

/**
 * A command that starts a child and a grandchild, records every pid and a
 * heartbeat in the scratch directory, prints `ready`, and runs forever.
 * Teardown is then verified through the sandbox itself: the recorded pids
 * must be gone and the heartbeat must stop, which works for remote backends
 * as well as local ones. Needs a POSIX shell and coreutils' `sleep`.
 */
export const TREE_SCRIPT = [
  'D=$1',
  'echo $$ > "$D/leader"',
  '( ( while :; do sleep 0.05; done ) & echo $! > "$D/grandchild"; while :; do sleep 0.05; done ) &',
  'echo $! > "$D/child"',
  'i=0',
  'echo ready',
  'while :; do i=$((i+1)); echo $i > "$D/heartbeat"; sleep 0.05; done',
].join('\n');

/** A running tree and where its pids live. */
export interface Tree {
  readonly proc: Process;
  readonly dir: string;
  /** Leader, child and grandchild pids, once all three were recorded. */
  pids(): Promise<number[]>;
}

/** Starts the tree; the caller decides how to abandon it. */
export async function startTree(ctx: CaseContext, options: StreamOptions = {}): Promise<Tree> {
  const dir = await ctx.scratch();
  const proc = ctx.sandbox.stream(['sh', '-c', TREE_SCRIPT, 'sh', dir], options);
  return { proc, dir, pids: () => treePids(ctx, dir) };
}

/** Reads the three recorded pids, waiting until all exist. */
export async function treePids(ctx: CaseContext, dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of ['leader', 'child', 'grandchild']) {
    const text = await ctx.poll(
      async () => {
        const content = await ctx.readFile(`${dir}/${name}`);
        return content !== undefined && /^[0-9]+\s*$/.test(content) ? content : undefined;
      },
      5_000,
      `the test command never recorded its ${name} pid`,
    );
    pids.push(Number(text.trim()));
  }
  return pids;
}

/** Fails unless the heartbeat has stopped. */
export async function expectHeartbeatStopped(ctx: CaseContext, dir: string, what: string): Promise<void> {
  const before = await ctx.readFile(`${dir}/heartbeat`);
  await ctx.sleep(200);
  const after = await ctx.readFile(`${dir}/heartbeat`);
  if (before !== after) {
    throw new ConformanceFailure(`${what}: the command's heartbeat is still beating (${before?.trim()} -> ${after?.trim()})`);
  }
}

/**
 * Fails unless every pid of the tree is gone. The leader must be gone at
 * once; its descendants get the grace period plus a margin, since signals
 * to a tree are delivered, not awaited.
 */
export async function expectTreeGone(ctx: CaseContext, tree: { dir: string }, pids: readonly number[], what: string): Promise<void> {
  const [leader, ...rest] = pids;
  // Every process of the tree runs with the scratch directory in its argv: the probe's token.
  if (leader !== undefined) await ctx.expectGone([leader], 500, `${what}: the command itself survived`, tree.dir);
  await ctx.expectGone(rest, ctx.graceMs + 1_000, `${what}: a process the command started survived`, tree.dir);
  await expectHeartbeatStopped(ctx, tree.dir, what);
}

/** Reads chunks until `ready` was printed. */
export async function untilReady(iterator: AsyncIterator<{ data: Uint8Array }>): Promise<void> {
  let seen = '';
  while (!seen.includes('ready')) {
    const next = await iterator.next();
    if (next.done) throw new ConformanceFailure('the command ended before printing "ready"');
    seen += Buffer.from(next.value.data).toString('latin1');
  }
}
