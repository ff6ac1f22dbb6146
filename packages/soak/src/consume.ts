/**
 * Runs one planned process through its ending and checks what the consumer
 * saw. Everything here is what a careful caller of the contract would do;
 * anything the contract does not promise is reported as a problem.
 */
import { AbortError, SandstreamError, type ExecResult, type Process } from '@sandstream/types';
import { consumeBackground } from './consume-background.js';
import { consumeOwnerKilled } from './consume-owner.js';
import { bounded, checkEnd, conclude, describeThrown, terminalOf, verifySettled as settledWithin, WAIT_TIMEOUT, type ConsumeContext, type ProcessOutcome } from './consume-support.js';
import { isBackground } from './endings.js';
import { feed } from './feed.js';
import { OutputCheck } from './output-check.js';
import type { ProcessPlan } from './plan.js';
import { Progress } from './progress.js';

export { describeThrown, type ConsumeContext, type ProcessOutcome };

/** The error a `throw` ending throws, to tell it from any error of the runtime. */
class ConsumerThrow extends Error {}

/** How feeding standard input went: undefined when every write and the end succeeded. */
type FeedFailure = { readonly typed: boolean; readonly description: string } | undefined;

/** Starts the writer of a stdin-reading command. */
function startFeeding(proc: Process, plan: ProcessPlan, progress: Progress): Promise<FeedFailure> {
  const data = plan.command.stdin;
  if (data === undefined || proc.stdin === null) return Promise.resolve(undefined);
  return feed(proc.stdin, data, plan.stdinPiece, progress).then(
    () => undefined,
    (error: unknown) => ({ typed: error instanceof SandstreamError, description: describeThrown(error) }),
  );
}

/**
 * A failed write is a problem when the command was meant to read it all; once
 * the consumer ended the command, writes may fail, but with a typed error only.
 */
function judgeFeeding(failure: FeedFailure, mustSucceed: boolean, problems: string[]): void {
  if (failure !== undefined && (mustSucceed || !failure.typed)) problems.push(`writing stdin failed: ${failure.description}`);
}

function streamOptions(plan: ProcessPlan, extra: { signal?: AbortSignal; timeout?: number } = {}) {
  return { stdin: plan.command.stdin === undefined ? ('ignore' as const) : ('pipe' as const), ...terminalOf(plan), ...extra };
}

/**
 * Runs one planned process in `context`, ending it as planned; `progress`
 * follows it, for a caller that gives up on it to say where it stood.
 */
export async function consume(plan: ProcessPlan, context: ConsumeContext, progress: Progress = new Progress()): Promise<ProcessOutcome> {
  if (isBackground(plan.ending)) return consumeBackground(plan, plan.ending, context, progress);
  if (plan.ending.kind === 'owner-killed') return consumeOwnerKilled(plan, context, progress);
  const argv = ['sh', '-c', plan.command.script];
  const check = new OutputCheck(plan.command.expected(), context.textOnly);
  const accept = (chunk: { stream: 'stdout' | 'stderr'; data: Uint8Array }): void => {
    progress.chunk(chunk.data.byteLength);
    check.accept(chunk);
  };
  const feedIn = (proc: Process): Promise<FeedFailure> => startFeeding(proc, plan, progress);
  const problems: string[] = [];
  const { ending } = plan;
  const lingers = plan.command.lingers;
  let teardownMs: number | undefined;
  let verified = false;

  /**
   * After a natural end: the result and every byte. A command whose standard input was cut by a
   * typed failure (judgeFeeding reports it; under a host limit it is a refused request) read less
   * than planned: only its output's prefix is checked (conclude), not its end nor every byte.
   */
  const verifyComplete = (result: ExecResult, feeding: FeedFailure = undefined): void => {
    if (feeding?.typed) return;
    checkEnd(result, plan.command.end, problems);
    if (lingers) problems.push('a lingering command ended by itself');
    problems.push(...check.completeProblems());
    verified = true;
  };

  /** After the consumer's own ending: the command must be settled. */
  const verifySettled = (proc: Process): Promise<void> => settledWithin(proc, context, progress, problems);

  switch (ending.kind) {
    case 'complete-stream': {
      await using proc = context.shared.stream(argv, streamOptions(plan));
      const writing = feedIn(proc);
      progress.stage = 'reading';
      for await (const chunk of proc) accept(chunk);
      progress.stage = 'waiting';
      const result = await proc.wait();
      const fed = await writing;
      judgeFeeding(fed, true, problems);
      progress.stage = 'disposing';
      if (!result.streamed) problems.push('a streamed result without streamed: true');
      verifyComplete(result, fed);
      break;
    }
    case 'complete-run': {
      progress.stage = 'reading';
      const result = await context.shared.run(argv, { ...(plan.command.stdin === undefined ? {} : { input: plan.command.stdin }), ...terminalOf(plan) });
      check.acceptBytes('stdout', result.stdout);
      check.acceptBytes('stderr', result.stderr);
      if (result.stdoutTruncated || result.stderrTruncated) problems.push('truncated below the default cap');
      verifyComplete(result);
      break;
    }
    case 'break':
    case 'throw': {
      let acted: number | undefined;
      let endedBy: 'self' | 'consumer' = 'self';
      const proc = context.shared.stream(argv, streamOptions(plan));
      let writing: Promise<FeedFailure> = Promise.resolve(undefined);
      try {
        await using scoped = proc;
        writing = feedIn(scoped);
        progress.stage = 'reading';
        let n = 0;
        const due = (): boolean => n >= ending.atChunk || (lingers && check.complete());
        if (due()) {
          endedBy = 'consumer';
          acted = performance.now();
          if (ending.kind === 'throw') throw new ConsumerThrow();
        } else {
          for await (const chunk of scoped) {
            accept(chunk);
            n++;
            if (due()) {
              endedBy = 'consumer';
              acted = performance.now();
              progress.stage = 'disposing';
              if (ending.kind === 'throw') throw new ConsumerThrow();
              break;
            }
          }
        }
        progress.stage = 'disposing';
      } catch (error) {
        if (!(error instanceof ConsumerThrow)) problems.push(`leaving the scope failed: ${describeThrown(error)}`);
      }
      if (acted !== undefined) teardownMs = performance.now() - acted;
      const fed = await writing;
      judgeFeeding(fed, endedBy === 'self', problems);
      if (endedBy === 'self') verifyComplete(await proc.wait(), fed);
      else await verifySettled(proc);
      break;
    }
    case 'abort': {
      const controller = new AbortController();
      if (ending.before) controller.abort(new Error('aborted before the start'));
      let acted: number | undefined;
      let endedBy: 'self' | 'consumer' | 'abort' = 'self';
      const proc = context.shared.stream(argv, streamOptions(plan, { signal: controller.signal }));
      let writing: Promise<FeedFailure> = Promise.resolve(undefined);
      try {
        await using scoped = proc;
        writing = feedIn(scoped);
        progress.stage = 'reading';
        let n = 0;
        const due = (): boolean => n >= ending.atChunk || (lingers && check.complete());
        const act = (): void => {
          if (acted !== undefined) return;
          endedBy = 'consumer';
          acted = performance.now();
          controller.abort(new Error('the consumer aborted'));
        };
        if (!ending.before && due()) act();
        for await (const chunk of scoped) {
          accept(chunk);
          n++;
          if (due()) act();
        }
        progress.stage = 'disposing';
      } catch (error) {
        if (error instanceof AbortError) endedBy = 'abort';
        else problems.push(`the loop failed with ${describeThrown(error)}, not AbortError`);
      }
      if (acted !== undefined) teardownMs = performance.now() - acted;
      const fed = await writing;
      judgeFeeding(fed, endedBy === 'self' && !ending.before, problems);
      if (ending.before) {
        if (endedBy !== 'abort') problems.push('a signal aborted before the start did not reject the loop with AbortError');
        if (proc.pid !== undefined) problems.push(`a signal aborted before the start still started pid ${proc.pid}`);
      } else if (endedBy === 'self') {
        verifyComplete(await proc.wait(), fed);
      } else {
        // Aborted, or it ended by itself just as the consumer aborted: settled either way.
        await verifySettled(proc);
      }
      break;
    }
    case 'timeout': {
      const started = performance.now();
      await using proc = context.shared.stream(argv, streamOptions(plan, { timeout: ending.ms }));
      const writing = feedIn(proc);
      progress.stage = 'reading';
      for await (const chunk of proc) accept(chunk);
      progress.stage = 'waiting';
      const result = await proc.wait();
      progress.stage = 'disposing';
      const fed = await writing;
      judgeFeeding(fed, !result.timedOut, problems);
      if (result.timedOut) {
        teardownMs = Math.max(0, performance.now() - started - ending.ms);
      } else {
        verifyComplete(result, fed);
      }
      break;
    }
    case 'close-sandbox': {
      const sandbox = await context.openSandbox();
      let closed = false;
      try {
        const proc = sandbox.stream(argv, streamOptions(plan));
        const companions = ending.companions.map((script) => sandbox.stream(['sh', '-c', script]));
        const writing = feedIn(proc);
        progress.stage = 'reading';
        const iterator = proc[Symbol.asyncIterator]();
        let n = 0;
        let done = false;
        const due = (): boolean => n >= ending.atChunk || (lingers && check.complete());
        let failure: unknown;
        while (!done && !due()) {
          try {
            const next = await iterator.next();
            if (next.done) done = true;
            else {
              accept(next.value);
              n++;
            }
          } catch (error) {
            failure = error;
            done = true;
          }
        }
        if (failure !== undefined) problems.push(`reading before the close failed: ${describeThrown(failure)}`);
        const acted = performance.now();
        closed = true;
        progress.stage = 'closing the sandbox';
        const closing = sandbox.close();
        // The loop in flight ends once the sandbox is closed (normally or with an error: the command was ended).
        const drained = bounded(
          (async () => {
            for (;;) {
              const next = await iterator.next().catch(() => ({ done: true as const, value: undefined }));
              if (next.done) return;
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
        for (const p of [proc, ...companions]) await verifySettled(p);
        if (done && failure === undefined) {
          // It ended before the close: a natural end, checked like any other.
          const fed = await writing;
          judgeFeeding(fed, true, problems);
          verifyComplete(await proc.wait(), fed);
        } else {
          judgeFeeding(await writing, false, problems);
        }
      } finally {
        if (!closed) await sandbox.close().catch(() => undefined);
      }
      break;
    }
  }
  progress.stage = 'checking';
  return conclude(plan, context, [check], { problems, verified, teardownMs });
}
