/**
 * The `owner-killed` ending (spec 1.4, section 9.11, SS-OWNER-1): the command
 * is started in the foreground not by this process but by an owner process
 * of its own (`owner-process.ts`), on the same environment, with a marker of
 * its own beside the run's. Once the owner has read its chunks, the soak
 * proves it sees the command's processes, kills the owner with SIGKILL, and
 * watches the host's process table until nothing carrying that marker is
 * left; past the bound (the shared sandbox's `ownerLossMs`, scaled for load)
 * the survivors are named by pid. The owner and whatever survives are
 * killed by pid whatever happens.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { markedProcesses, signalEach } from '@sandstream/types/runtime';
import { bounded, conclude, terminalOf, WAIT_TIMEOUT, type ConsumeContext, type ProcessOutcome } from './consume-support.js';
import type { OwnerJoin } from './owner-join.js';
import type { OwnerMessage, OwnerOrder } from './owner-process.js';
import { OutputCheck } from './output-check.js';
import type { ProcessPlan } from './plan.js';
import type { Progress } from './progress.js';

/** The variable that marks one `owner-killed` command's processes: `<run id>:<index>`. */
export const OWNED_MARKER = 'SANDSTREAM_SOAK_OWNED';

/** What the `owner-killed` ending needs of the run. */
export interface OwnerContext {
  readonly join: OwnerJoin;
  /** The shared sandbox's `termination.ownerLossMs`, undefined when it states none. */
  readonly statedMs: number | undefined;
  /** How long the tree may take to go after the kill: the stated bound (or a fallback) scaled for load. */
  readonly boundMs: number;
  /** The run is under host limits: an owner process the host has no room for is refused, not a violation. */
  readonly hostLimited: boolean;
  /** The backend's own view of marked processes, where the host's `/proc` does not show them (`Target.marked`). */
  readonly marked?: (name: string, value: string) => Promise<{ pid: number; cmdline: string }[]>;
}

/** How the load scales the stated bound: twice it, and 10 s more (a starved host runs a guardian or a supervisor late). */
export function ownerLossBound(statedMs: number): number {
  return statedMs * 2 + 10_000;
}

/**
 * The host had no room for the owner process itself (its spawn, its threads, its descriptors).
 * Node.js aborts (SIGABRT) when it cannot start its own threads, at times before it can write a
 * word: under a limit on processes that is the same refusal, with an empty standard error.
 */
const HOST_REFUSAL = /\b(EAGAIN|EMFILE|ENFILE|ENOMEM)\b|Resource temporarily unavailable|Too many open files|uv_thread_create|pthread_create|\(SIGABRT\) before answering/;

/**
 * Descriptors this process has to spare, from its soft limit, or undefined where it cannot tell.
 * A fork that fails for want of them leaves its pipes open in Node.js (two handles nothing can
 * reach), so under a host limit an owner process is started only with room for them.
 */
function spareDescriptors(): number | undefined {
  try {
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return limit === undefined ? undefined : Number(limit) - readdirSync('/proc/self/fd').length;
  } catch {
    return undefined;
  }
}

/** What a fork of the owner takes at once: its standard error's pipe, its IPC channel, the spawn's own pipe, with a margin. */
const FORK_DESCRIPTORS = 10;

function ownerScript(): string {
  const here = import.meta.url;
  return fileURLToPath(here.endsWith('.ts') ? new URL('../dist/owner-process.js', here) : new URL('./owner-process.js', here));
}

type Reply = OwnerMessage | { readonly exited: string };

/** The owner's first answer, or its end before it answered. */
function firstReply(child: ChildProcess, stderr: () => string): Promise<Reply> {
  return new Promise((resolve) => {
    child.once('message', (message: OwnerMessage) => resolve(message));
    child.once('error', (error) => resolve({ exited: `${error.message}` }));
    child.once('exit', (code, signal) => resolve({ exited: `it exited (${code ?? signal}) before answering; stderr: ${stderr().slice(-800) || '(empty)'}` }));
  });
}

/** The processes of an owner's command, by its marker. */
type Tree = readonly { pid: number; cmdline: string }[];

function named(processes: readonly { pid: number; cmdline: string }[]): string {
  return processes.map((p) => `pid ${p.pid} (${p.cmdline.slice(0, 80)})`).join(', ');
}

/** Runs one `owner-killed` process: see the module comment. */
export async function consumeOwnerKilled(plan: ProcessPlan, context: ConsumeContext, progress: Progress): Promise<ProcessOutcome> {
  const owner = context.owner;
  if (owner === undefined) throw new Error('the owner-killed ending needs ConsumeContext.owner');
  if (plan.ending.kind !== 'owner-killed') throw new Error(`not an owner-killed ending: ${plan.ending.kind}`);
  const problems: string[] = [];
  const check = new OutputCheck(plan.command.expected(), context.textOnly);
  const value = `${owner.join.marker.value}:${plan.index}`;
  const marked = owner.marked;
  const tree = async (): Promise<Tree> => (marked === undefined ? markedProcesses(OWNED_MARKER, value) : marked(OWNED_MARKER, value));
  let ownerLoss: ProcessOutcome['ownerLoss'];
  const spare = owner.hostLimited ? spareDescriptors() : undefined;
  if (spare !== undefined && spare < FORK_DESCRIPTORS) {
    problems.push(`OwnerRefused HOST: no room for the owner process, ${spare} descriptor(s) to spare`);
    return conclude(plan, context, [check], { problems, verified: false, teardownMs: undefined });
  }
  let stderr = '';
  const child = fork(ownerScript(), [], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'advanced', execArgv: [] });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()).once('error', () => resolve()));
  // Any error of the child (a failed spawn, a failed send) is answered through firstReply.
  child.on('error', () => undefined);
  child.stderr?.on('data', (data: Buffer) => void (stderr = (stderr + data.toString('utf8')).slice(-4096)));
  try {
    const expected = plan.command.expected();
    const order: OwnerOrder = {
      join: owner.join,
      script: plan.command.script,
      owned: { name: OWNED_MARKER, value },
      ...(plan.command.stdin === undefined ? {} : { stdin: plan.command.stdin }),
      ...terminalOf(plan),
      stdinPiece: plan.stdinPiece,
      atChunk: plan.ending.atChunk,
      expected: { stdout: expected.stdout.byteLength, stderr: expected.stderr.byteLength },
    };
    const replying = firstReply(child, () => stderr);
    // Without its IPC channel the spawn failed (descriptors short): firstReply gets the error.
    if (child.connected) child.send(order, () => undefined);
    progress.stage = 'reading';
    const reply = await bounded(replying, context.waitBoundMs);
    if (reply === WAIT_TIMEOUT || 'exited' in reply || 'error' in reply) {
      const why =
        reply === WAIT_TIMEOUT
          ? `it did not report its command started within ${context.waitBoundMs} ms; stderr: ${stderr.slice(-800) || '(empty)'}`
          : 'exited' in reply
            ? reply.exited
            : reply.error;
      // Under a host limit, an owner the host had no room for is refused (counted), like a typed
      // error: the owner is a whole Node.js process under the same limit, which may fail with a
      // word (HOST_REFUSAL), abort, or hang silently in its start (seen beside a second suite
      // under the limit on processes: no answer within the bound, nothing on standard error).
      if ((reply === WAIT_TIMEOUT || 'exited' in reply) && owner.hostLimited && (HOST_REFUSAL.test(why) || reply === WAIT_TIMEOUT)) problems.push(`OwnerRefused HOST: the owner process could not run: ${why}`);
      else problems.push(`the owner process failed: ${why}`);
    } else {
      for (const chunk of reply.ready.chunks) {
        progress.chunk(chunk.data.byteLength);
        check.accept(chunk);
      }
      ownerLoss = await killAndWatch(child, tree, owner, context, progress, problems);
    }
  } finally {
    if (child.pid !== undefined) child.kill('SIGKILL');
    child.stderr?.destroy();
    // Host pids only: the backend's own (gVisor's) name no process of this host, and its
    // container goes with the run.
    if (marked === undefined) signalEach(markedProcesses(OWNED_MARKER, value).map((p) => p.pid));
    await bounded(closed, context.waitBoundMs);
  }
  progress.stage = 'checking';
  return { ...conclude(plan, context, [check], { problems, verified: false, teardownMs: undefined }), ...(ownerLoss === undefined ? {} : { ownerLoss }) };
}

/** Proves the tree is there, kills the owner, and watches the tree go within the bound. */
async function killAndWatch(
  child: ChildProcess,
  tree: () => Promise<Tree>,
  owner: OwnerContext,
  context: ConsumeContext,
  progress: Progress,
  problems: string[],
): Promise<ProcessOutcome['ownerLoss']> {
  // Presence first: an absence after the kill proves nothing unless the tree was seen.
  const presenceBound = performance.now() + Math.min(context.waitBoundMs, 10_000);
  while ((await tree()).length === 0) {
    if (performance.now() > presenceBound) {
      problems.push(`the owner process reported its command started, but no process carrying ${OWNED_MARKER} is seen on the host: its absence after the kill would prove nothing`);
      return undefined;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  progress.stage = 'owner killed';
  const killedAt = performance.now();
  child.kill('SIGKILL');
  for (;;) {
    const left = await tree();
    const elapsed = performance.now() - killedAt;
    if (left.length === 0) return { goneMs: elapsed };
    if (elapsed > owner.boundMs) {
      const stated = owner.statedMs === undefined ? 'the sandbox states no ownerLossMs' : `ownerLossMs ${owner.statedMs} ms`;
      return { outlived: `its owner process was killed with SIGKILL ${Math.round(elapsed)} ms ago and its foreground command still runs: ${named(left)} (${stated}, ${owner.boundMs} ms allowed under load)` };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
