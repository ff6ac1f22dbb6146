import type { Process, StreamOptions } from '@sandstream/types';
import { ConformanceFailure, HarnessError } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { arrivalOf, signal, type Printed } from './arrival.js';
import { expectAlive, expectGoneNow, readPid, scratch, type Watched } from './observe.js';

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
  /** The command as started: `sh -c TREE dir token`, the token ($2, unused) for started-evidence.ts. */
  readonly argv: readonly string[];
  /** Leader, child and grandchild pids, once all three were recorded. */
  pids(): Promise<number[]>;
  /** The same three, named for failure messages. */
  processes(): Promise<Watched[]>;
}

const ROLES: ReadonlyArray<readonly [string, string]> = [
  ['leader', 'the command itself'],
  ['child', 'a child of the command'],
  ['grandchild', 'a grandchild of the command'],
];

/** Starts the tree; the caller decides how to abandon it. */
export async function startTree(ctx: CaseContext, options: StreamOptions = {}): Promise<Tree> {
  const dir = await scratch(ctx);
  const argv = ['sh', '-c', TREE_SCRIPT, 'sh', dir, ctx.token('tree')];
  const proc = ctx.sandbox.stream(argv, options);
  const processes = (): Promise<Watched[]> => treeProcesses(ctx, dir);
  return { proc, dir, argv, processes, pids: async () => (await processes()).map((p) => p.pid) };
}

/** Reads the three recorded pids, waiting a measured bound until all exist. */
export async function treeProcesses(ctx: CaseContext, dir: string): Promise<Watched[]> {
  const processes: Watched[] = [];
  for (const [name, role] of ROLES) processes.push({ pid: await readPid(ctx, `${dir}/${name}`, `the test command (${role})`), role });
  return processes;
}

/** Reads the three recorded pids, waiting until all exist. */
export async function treePids(ctx: CaseContext, dir: string): Promise<number[]> {
  return (await treeProcesses(ctx, dir)).map((p) => p.pid);
}

// Reads the heartbeat, lets the sandbox's own clock run for 0.3 s, reads it
// again: the interval is measured inside the sandbox, so no round trip of
// the kit's can make a beating heart look still.
// A heartbeat cut short by the kill may leave the file empty or missing: both read as "".
const HEARTBEAT_SCRIPT = 'a=$(cat "$1/heartbeat" 2>/dev/null); sleep 0.3; b=$(cat "$1/heartbeat" 2>/dev/null); printf "%s %s|" "$a" "$b"';

// Reads the heartbeat, then again every 0.05 s of the sandbox's clock until it changed, 60 times
// at most: a beating heart is seen at its next beat, however late a loaded sandbox runs it (a fixed
// 0.3 s took a live one for stopped beside a second test suite); only a stopped one waits it out.
const BEATS_SCRIPT = 'a=$(cat "$1/heartbeat" 2>/dev/null); n=0; while [ "$n" -lt 60 ]; do sleep 0.05; b=$(cat "$1/heartbeat" 2>/dev/null); [ "$a" != "$b" ] && break; n=$((n+1)); done; printf "%s %s|" "$a" "$b"';

/** Whether the heartbeat advanced: at its next beat, or not within 60 polls 0.05 s apart on the sandbox's clock. */
export async function heartbeatBeats(ctx: CaseContext, dir: string): Promise<boolean> {
  const result = await ctx.exec(['sh', '-c', BEATS_SCRIPT, 'sh', dir]);
  const match = /^([0-9]*) ([0-9]*)\|$/.exec(result.stdoutText);
  if (result.exitCode !== 0) throw new HarnessError(`could not read the heartbeat in ${dir} (exit ${result.exitCode}): ${result.stderrText.trim()}`);
  if (match === null) {
    throw new ConformanceFailure(`run() lost output of the helper that reads the heartbeat: it printed ${JSON.stringify(result.stdoutText)}`);
  }
  return match[1] !== match[2];
}

/** Fails unless the heartbeat has stopped. */
export async function expectHeartbeatStopped(ctx: CaseContext, dir: string, what: string): Promise<void> {
  const result = await ctx.exec(['sh', '-c', HEARTBEAT_SCRIPT, 'sh', dir]);
  const match = /^([0-9]*) ([0-9]*)\|$/.exec(result.stdoutText);
  if (result.exitCode !== 0) throw new HarnessError(`could not read the heartbeat in ${dir} (exit ${result.exitCode}): ${result.stderrText.trim()}`);
  if (match === null) {
    throw new ConformanceFailure(`run() lost output of the helper that reads the heartbeat: it printed ${JSON.stringify(result.stdoutText)}`);
  }
  if (match[1] !== match[2]) {
    throw new ConformanceFailure(`${what}: the command's heartbeat is still beating (${match[1]} -> ${match[2]} within 0.3 s)`);
  }
}

/**
 * Fails unless every process of the tree is gone at the first look: the
 * result (or the disposal) is known, so nothing the command started may
 * still run. The liveness probe must have seen them alive before
 * ({@link expectAlive}), so that "gone" means something.
 */
export async function expectTreeGone(ctx: CaseContext, tree: { dir: string }, processes: readonly Watched[], what: string): Promise<void> {
  // Every process of the tree runs with the scratch directory in its argv: the probe's token.
  await expectGoneNow(ctx, processes, tree.dir, what);
  await expectHeartbeatStopped(ctx, tree.dir, what);
}

/** Records the tree's processes and shows that the liveness probe sees them. */
export async function watchTree(ctx: CaseContext, tree: Tree): Promise<Watched[]> {
  const processes = await tree.processes();
  await expectAlive(ctx, processes, tree.dir);
  return processes;
}

/**
 * Reads chunks until `ready` was printed. With `printed` (the command
 * creates a marker right after printing it), an adapter that holds the line
 * back fails within a measured bound instead of the case's limit.
 */
export async function untilReady(iterator: AsyncIterator<{ data: Uint8Array }>, printed?: Printed): Promise<void> {
  let seen = '';
  const reading = (async () => {
    while (!seen.includes('ready')) {
      const next = await iterator.next();
      if (next.done) throw new ConformanceFailure('the command ended before printing "ready"');
      seen += Buffer.from(next.value.data).toString('latin1');
    }
  })();
  if (printed === undefined) return reading;
  await arrivalOf(reading, { ...printed, what: 'the line "ready" (iterating the Process)', got: () => seen });
}

/**
 * Runs `loop`, the case's own `for await` over the tree's output, which
 * passes what it reads to `note` (true once "ready" was seen); fails within
 * a measured bound if the tree printed "ready" but the loop never saw it.
 */
export async function loopingUntilReady<T>(ctx: CaseContext, tree: Tree, loop: (note: (text: string) => boolean) => Promise<T>): Promise<T> {
  let seen = '';
  const ready = signal();
  const looping = loop((text) => {
    seen += text;
    if (!seen.includes('ready')) return false;
    ready.saw();
    return true;
  });
  const ended = looping.then(
    () => undefined,
    () => undefined,
  );
  await arrivalOf(Promise.race([ready.promise, ended]), { ...treePrinted(ctx, tree), what: 'the line "ready" (iterating the Process with for await)', got: () => seen });
  return looping;
}

/** How the kit knows a tree printed "ready": its heartbeat, written after the line. */
export function treePrinted(ctx: CaseContext, tree: { dir: string }): Printed {
  return { ctx, marker: `${tree.dir}/heartbeat` };
}
