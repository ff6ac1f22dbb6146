/**
 * The endings of background commands (spec 1.2, ADR-0036), where the target
 * has `attach`: what a careful agent does with a command that outlives one
 * tool call. It starts the command with `background: true`, reads a little
 * and detaches; later it attaches by id to read the rest (every byte once:
 * what the attached Process delivers is exactly each stream from its
 * `skipped` on), to kill it, or to wait for its end and forget it; or it
 * closes the sandbox that owns it. After each, nothing may run on and no
 * record may stay.
 */
import { CommandNotFound, hasCapability, InvalidState, SandboxClosed, type BackgroundProcess, type OutputChunk, type Sandbox, type StreamName } from '@sandstream/types';
import { bounded, checkEnd, conclude, describeThrown, terminalOf, verifySettled, WAIT_TIMEOUT, type ConsumeContext, type ProcessOutcome } from './consume-support.js';
import type { BackgroundEndingName, EndingPlan } from './endings.js';
import { OutputCheck } from './output-check.js';
import type { ProcessPlan } from './plan.js';
import type { Progress } from './progress.js';

type BackgroundEnding = Extract<EndingPlan, { kind: BackgroundEndingName }>;
type Streams = { readonly stdout: Uint8Array; readonly stderr: Uint8Array };
type Counts = Readonly<Record<StreamName, number>>;
type Replay = 'full' | 'tail' | 'follow';

const STREAMS = ['stdout', 'stderr'] as const;
/** Under `replay-tail` an attach replays at least the last MiB of each stream (or all of it, if less). */
const TAIL_PROMISE = 1024 * 1024;

/** What the target's manifest promises an attach replays. */
function replayOf(sandbox: Sandbox): Replay {
  if (hasCapability(sandbox.capabilities, 'replay-full')) return 'full';
  return hasCapability(sandbox.capabilities, 'replay-tail') ? 'tail' : 'follow';
}

/** Each stream from its offset in `skip` on. */
function from(expected: Streams, skip: Counts): Streams {
  return { stdout: expected.stdout.subarray(skip.stdout), stderr: expected.stderr.subarray(skip.stderr) };
}

/**
 * The `skipped` of an attached Process, held to the manifest's promise
 * (`replayed`: it was attached with a replay); undefined when it is not
 * counted or not usable, so that what it delivers is checked as the end of
 * each stream instead.
 */
function skipOf(proc: BackgroundProcess, expected: Streams, replay: Replay, replayed: boolean, problems: string[]): Counts | undefined {
  const skipped = proc.skipped;
  if (skipped === undefined) {
    // With { replay: false } a count is optional (SS-ATTACH-2: "where the implementation counts it").
    if (replay !== 'follow' && replayed) problems.push(`attach() gave a Process whose skipped is undefined, though the target declares replay-${replay}`);
    return undefined;
  }
  let usable = true;
  for (const stream of STREAMS) {
    const s = skipped[stream];
    const total = expected[stream].byteLength;
    if (!Number.isSafeInteger(s) || s < 0 || s > total) {
      problems.push(`${stream}: an attached Process's skipped is ${s}, outside the ${total} bytes the command writes`);
      usable = false;
    } else if (replayed && replay === 'full' && s !== 0) {
      problems.push(`${stream}: an attach under replay-full skipped ${s} bytes`);
    } else if (replayed && replay === 'tail' && s > Math.max(0, total - TAIL_PROMISE)) {
      problems.push(`${stream}: an attach under replay-tail skipped ${s} of ${total} bytes, more than all but the last MiB`);
    }
  }
  return usable ? skipped : undefined;
}

/**
 * What an attached Process delivers, checked as D = T[s..] per stream: from
 * its `skipped` on when counted; otherwise (a follow-only attach) held until
 * the end and checked as the end of each stream.
 */
class SuffixCheck {
  #check: OutputCheck | undefined;
  readonly #held: OutputChunk[] = [];

  constructor(
    private readonly expected: Streams,
    skip: Counts | undefined,
    private readonly textOnly: boolean,
    private readonly progress: Progress,
  ) {
    if (skip !== undefined) this.#check = new OutputCheck(from(expected, skip), textOnly);
  }

  accept(chunk: OutputChunk): void {
    this.progress.chunk(chunk.data.byteLength);
    if (this.#check !== undefined) this.#check.accept(chunk);
    else this.#held.push(chunk);
  }

  /** The check, the stream being over. */
  finish(): OutputCheck {
    if (this.#check !== undefined) return this.#check;
    const got = { stdout: 0, stderr: 0 };
    for (const chunk of this.#held) got[chunk.stream] += chunk.data.byteLength;
    const skip = { stdout: Math.max(0, this.expected.stdout.byteLength - got.stdout), stderr: Math.max(0, this.expected.stderr.byteLength - got.stderr) };
    this.#check = new OutputCheck(from(this.expected, skip), this.textOnly);
    for (const chunk of this.#held.splice(0)) this.#check.accept(chunk);
    return this.#check;
  }
}

/** Reads chunks until `due()` or the end of output; a failure of the loop ends the reading. */
async function readSome(
  proc: BackgroundProcess,
  due: (n: number) => boolean,
  accept: (chunk: OutputChunk) => void,
  progress: Progress,
): Promise<{ iterator: AsyncIterator<OutputChunk, undefined>; done: boolean; failure: unknown }> {
  // By hand, not for-await: leaving that loop would end the command.
  const iterator = proc[Symbol.asyncIterator]();
  progress.stage = 'reading';
  let n = 0;
  try {
    while (!due(n)) {
      const next = await iterator.next();
      if (next.done === true) return { iterator, done: true, failure: undefined };
      accept(next.value);
      n++;
    }
  } catch (error) {
    return { iterator, done: true, failure: error };
  }
  return { iterator, done: false, failure: undefined };
}

/** The Process that started the command, once started: it reads from the first byte. */
async function asStarter(proc: BackgroundProcess, progress: Progress, problems: string[]): Promise<void> {
  progress.stage = 'starting';
  await proc.started();
  const skipped = proc.skipped;
  if (skipped?.stdout !== 0 || skipped.stderr !== 0) problems.push(`the starter's skipped is ${JSON.stringify(skipped)}, not 0 per stream`);
}

/**
 * `detach()`, then what it promises where it took effect (the Process not
 * settled before it: a settled Process's `detach()` changes nothing):
 * `wait()` rejects with InvalidState and iteration is over.
 */
async function detachChecked(proc: BackgroundProcess, iterator: AsyncIterator<OutputChunk, undefined>, context: ConsumeContext, progress: Progress, problems: string[]): Promise<void> {
  progress.stage = 'detaching';
  await proc.detach();
  if (proc.exited) return;
  const waited = await bounded(proc.wait().then(() => 'resolved' as const, (error: unknown) => error), context.waitBoundMs);
  if (!(waited instanceof InvalidState)) {
    const how = waited === 'resolved' ? 'resolved' : waited === WAIT_TIMEOUT ? 'did not settle' : `rejected with ${describeThrown(waited)}`;
    problems.push(`wait() after detach() ${how}, not rejected with InvalidState`);
  }
  const next = await bounded(iterator.next().catch((error: unknown) => error), context.waitBoundMs);
  if (!(typeof next === 'object' && next !== null && 'done' in next && next.done === true)) {
    problems.push(`iteration did not end after detach(): ${next === WAIT_TIMEOUT ? 'next() did not settle' : next instanceof Error ? describeThrown(next) : 'a chunk'}`);
  }
}

/**
 * Starts the command in the background, reads until `due`, detaches, and
 * drops the Process (as one tool call of an agent would); the command's id.
 */
async function startAndDetach(
  sandbox: Sandbox,
  argv: string[],
  due: (n: number) => boolean,
  accept: (chunk: OutputChunk) => void,
  context: ConsumeContext,
  progress: Progress,
  problems: string[],
  terminal: ReturnType<typeof terminalOf>,
): Promise<string> {
  const proc = sandbox.stream(argv, { background: true, ...terminal });
  let detached = false;
  try {
    await asStarter(proc, progress, problems);
    const read = await readSome(proc, due, accept, progress);
    if (read.failure !== undefined) problems.push(`reading before detach() failed: ${describeThrown(read.failure)}`);
    await detachChecked(proc, read.iterator, context, progress, problems);
    detached = true;
    if (proc.commandId === undefined) throw new Error('a started background Process has no commandId');
    return proc.commandId;
  } finally {
    // Left before it was detached (a failed start or detach): its scope ends here, and the command with it.
    if (!detached) await proc[Symbol.asyncDispose]().catch(() => undefined);
  }
}

/** Once an attached Process of it was disposed: the command is unlisted and `attach()` finds nothing. */
async function checkForgotten(sandbox: Sandbox, id: string, progress: Progress, problems: string[]): Promise<void> {
  progress.stage = 'listing';
  if ((await sandbox.commands!()).some((info) => info.commandId === id)) problems.push(`commands() still lists ${id} after an attached Process of it was disposed`);
  const again = await sandbox.attach!(id).then(
    async (proc) => {
      await proc[Symbol.asyncDispose]().catch(() => undefined);
      return 'attached' as const;
    },
    (error: unknown) => error,
  );
  if (!(again instanceof CommandNotFound)) problems.push(`attach() of the forgotten ${id} ${again === 'attached' ? 'gave a Process' : `rejected with ${describeThrown(again)}`}, not CommandNotFound`);
  else if (again.commandId !== id) problems.push(`CommandNotFound names ${JSON.stringify(again.commandId)}, not ${id}`);
}

/** A closed sandbox refuses `attach()` and `commands()` with SandboxClosed. */
async function checkClosedRefuses(sandbox: Sandbox, id: string, problems: string[]): Promise<void> {
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['attach()', () => sandbox.attach!(id)],
    ['commands()', () => sandbox.commands!()],
  ];
  for (const [name, call] of calls) {
    const outcome = await call().then(() => 'resolved' as const, (error: unknown) => error);
    if (!(outcome instanceof SandboxClosed)) problems.push(`${name} of the closed sandbox ${outcome === 'resolved' ? 'resolved' : `rejected with ${describeThrown(outcome)}`}, not SandboxClosed`);
  }
}

/** Runs one process whose ending is a background one (see {@link BackgroundEnding}). */
export async function consumeBackground(plan: ProcessPlan, ending: BackgroundEnding, context: ConsumeContext, progress: Progress): Promise<ProcessOutcome> {
  const argv = ['sh', '-c', plan.command.script];
  const expected = plan.command.expected();
  const replay = replayOf(context.shared);
  const problems: string[] = [];
  const first = new OutputCheck(expected, context.textOnly);
  const checks = [first];
  const accept = (chunk: OutputChunk): void => {
    progress.chunk(chunk.data.byteLength);
    first.accept(chunk);
  };
  const due = (atChunk: number) => (n: number) => n >= atChunk || (plan.command.lingers && first.complete());
  let verified = false;
  let teardownMs: number | undefined;

  /** Reads an attached Process to its end: D = T[s..], the exact result; the check it made. */
  const readAttached = async (proc: BackgroundProcess, label: string): Promise<{ exitCode: number | null; signal: string | null }> => {
    const suffix = new SuffixCheck(expected, skipOf(proc, expected, replay, true, problems), context.textOnly, progress);
    progress.stage = 'reading';
    for await (const chunk of proc) suffix.accept(chunk);
    progress.stage = 'waiting';
    const result = await proc.wait();
    if (!result.streamed) problems.push(`${label}: a result without streamed: true`);
    checkEnd(result, plan.command.end, problems);
    const check = suffix.finish();
    checks.push(check);
    problems.push(...check.completeProblems().map((problem) => `${label}, from its skipped ${JSON.stringify(proc.skipped)}: ${problem}`));
    return result;
  };
  /** The first Process was detached, not ended: what it read must be exact, with no exception. */
  const firstExact = (): void => {
    const prefix = first.prefixProblem();
    if (prefix !== undefined) problems.push(`what the starter read before detach() differs from what the command wrote: ${prefix}`);
  };

  switch (ending.kind) {
    case 'detach-attach': {
      const id = await startAndDetach(context.shared, argv, due(ending.atChunk), accept, context, progress, problems, terminalOf(plan));
      progress.stage = 'attaching';
      await using attached = await context.shared.attach!(id);
      await readAttached(attached, 'the attached Process');
      firstExact();
      verified = true;
      progress.stage = 'disposing';
      break;
    }
    case 'kill-by-id': {
      const id = await startAndDetach(context.shared, argv, due(ending.atChunk), accept, context, progress, problems, terminalOf(plan));
      progress.stage = 'listing';
      const info = (await context.shared.commands!()).find((entry) => entry.commandId === id);
      if (info === undefined) problems.push(`commands() does not list the detached command ${id}`);
      else if (JSON.stringify(info.argv) !== JSON.stringify(argv)) problems.push(`commands() lists ${id} with argv ${JSON.stringify(info.argv)}`);
      progress.stage = 'attaching';
      let doomed: BackgroundProcess;
      let acted: number;
      {
        await using attached = await context.shared.attach!(id, { replay: false });
        doomed = attached;
        const skip = skipOf(attached, expected, replay, false, problems);
        // What the starter read was written before this attach: none of it follows.
        for (const stream of STREAMS) {
          if (skip !== undefined && skip[stream] < first.receivedOn(stream)) problems.push(`${stream}: an attach with { replay: false } skipped ${skip[stream]} bytes, fewer than the ${first.receivedOn(stream)} the starter had read`);
        }
        acted = performance.now();
        progress.stage = 'disposing';
      }
      teardownMs = performance.now() - acted;
      await verifySettled(doomed, context, progress, problems);
      await checkForgotten(context.shared, id, progress, problems);
      break;
    }
    case 'owner-closed': {
      const sandbox = await context.openSandbox();
      let closed = false;
      try {
        const proc = sandbox.stream(argv, { background: true, ...terminalOf(plan) });
        const companions = ending.companions.map((companion) => ({ proc: sandbox.stream(['sh', '-c', companion.script], { background: true }), detach: companion.detach }));
        await asStarter(proc, progress, problems);
        for (const companion of companions) if (companion.detach) await companion.proc.detach();
        const read = await readSome(proc, due(ending.atChunk), accept, progress);
        if (read.failure !== undefined) problems.push(`reading before the close failed: ${describeThrown(read.failure)}`);
        if (ending.detach && !read.done) await detachChecked(proc, read.iterator, context, progress, problems);
        const id = proc.commandId ?? 'unknown';
        const acted = performance.now();
        closed = true;
        progress.stage = 'closing the sandbox';
        const closing = sandbox.close();
        // The loop in flight ends once the sandbox is closed (at once if detached).
        const drained = bounded(
          (async () => {
            for (;;) {
              const next = await read.iterator.next().catch(() => ({ done: true as const, value: undefined }));
              if (next.done === true) return;
              accept(next.value);
            }
          })(),
          context.waitBoundMs,
        );
        const closeResult = await bounded(closing.then(() => undefined, (error: unknown) => describeThrown(error)), context.waitBoundMs);
        teardownMs = performance.now() - acted;
        if (closeResult === WAIT_TIMEOUT) problems.push(`close() did not resolve within ${context.waitBoundMs} ms`);
        else if (closeResult !== undefined) problems.push(`close() rejected: ${closeResult}`);
        if ((await drained) === WAIT_TIMEOUT) problems.push('the loop in flight did not end after close()');
        // Detached or not, every background command of the closed sandbox ended with it.
        for (const p of [proc, ...companions.map((companion) => companion.proc)]) await verifySettled(p, context, progress, problems);
        await checkClosedRefuses(sandbox, id, problems);
        if (read.done && read.failure === undefined) {
          // It ended before the close: a natural end, checked like any other.
          const result = await proc.wait();
          checkEnd(result, plan.command.end, problems);
          if (plan.command.lingers) problems.push('a lingering command ended by itself');
          problems.push(...first.completeProblems());
          verified = true;
        }
      } finally {
        if (!closed) await sandbox.close().catch(() => undefined);
      }
      break;
    }
    case 'ended-forgotten': {
      const id = await startAndDetach(context.shared, argv, () => true, accept, context, progress, problems, terminalOf(plan));
      {
        progress.stage = 'attaching';
        await using attached = await context.shared.attach!(id);
        const result = await readAttached(attached, 'the attached Process');
        // Ended, it stays listed until it is forgotten.
        progress.stage = 'listing';
        const info = (await context.shared.commands!()).find((entry) => entry.commandId === id);
        if (info?.state !== 'ended') problems.push(`commands() lists the ended command ${info === undefined ? 'not at all' : `as ${info.state}`} before it is forgotten`);
        // An attach after the end gives a settled Process: the same result, the same replay rule.
        progress.stage = 'attaching';
        await using late = await context.shared.attach!(id);
        const again = await readAttached(late, 'an attach after the end');
        // It ends by itself (SS-ATTACH-5): settled at once where the record is in the host, once replayed where it is read back.
        if (!late.exited) problems.push('an attach after the end gave a Process that had not exited once its output ended');
        if (again.exitCode !== result.exitCode || again.signal !== result.signal) problems.push(`an attach after the end gave exitCode ${again.exitCode} signal ${again.signal}, the first ${result.exitCode} ${result.signal}`);
        progress.stage = 'disposing';
      }
      await checkForgotten(context.shared, id, progress, problems);
      verified = true;
      break;
    }
  }
  progress.stage = 'checking';
  return conclude(plan, context, checks, { problems, verified, teardownMs });
}
