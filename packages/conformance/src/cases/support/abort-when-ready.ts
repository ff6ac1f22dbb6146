/**
 * A command run with run() and aborted once it printed "ready", for the
 * cases that measure termination from a point the command has reached.
 */
import type { ExecResult } from '@sandstream/types';
import { checkErrorCode, codeOf, ConformanceFailure, rejectionOf } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { seenInRun, signal, type Printed } from './arrival.js';
import { deliveryBound, readMarker, survivorsFailure, termination, watchHostLag, type Watched } from './observe.js';
import { settledWithinLag } from '../../timing.js';

const decoder = new TextDecoder();

/** What the aborted run() showed. */
export interface AbortedWhenReady {
  /** The AbortError's result. */
  readonly result: ExecResult | undefined;
  /** When the kit saw "ready" and aborted. */
  readonly abortedAt: number;
  /** When the kit first saw "term" in the output (the command's report of SIGTERM), or 0. */
  readonly termAt: number;
  /** When run() settled. */
  readonly endedAt: number;
  /** The longest stall of the kit's own process meanwhile. */
  readonly hostLag: number;
  /** All the output, as text. */
  readonly seen: string;
}

/**
 * Runs `argv` with run() and aborts it as soon as it printed `ready`, so the
 * termination sequence starts at a point the command has reached, whatever
 * the backend's start latency. Returns the AbortError's result.
 */
export async function runThenAbortWhenReady(
  ctx: CaseContext,
  argv: string[],
  watch?: { dir: string; names: readonly string[] },
  printed?: Printed,
  timeout = 30_000,
): Promise<AbortedWhenReady> {
  const controller = new AbortController();
  let seen = '';
  let abortedAt = 0;
  let termAt = 0;
  const lag = watchHostLag();
  let hostLag = 0;
  let error: unknown;
  const ready = signal();
  try {
    const running = ctx.sandbox.run(argv, {
      signal: controller.signal,
      timeout,
      onOutput: (chunk) => {
        seen += decoder.decode(chunk.data);
        if (termAt === 0 && seen.includes('term')) termAt = performance.now();
        if (!controller.signal.aborted && seen.includes('ready')) {
          abortedAt = performance.now();
          ready.saw();
          controller.abort(new Error('the case ends the command'));
        }
      },
    });
    if (printed !== undefined) await seenInRun(running, ready.promise, { ...printed, what: 'the line "ready" (through run()\'s onOutput)', got: () => seen }, controller);
    await settledAfterAbort(ctx, running, ready.promise);
    error = await rejectionOf(running, 'run() aborted once ready');
  } finally {
    hostLag = lag.stop();
  }
  const endedAt = performance.now();
  if (codeOf(error) !== 'ABORTED' && watch !== undefined) {
    // Name what survived, not only that no exit came.
    const processes: Watched[] = [];
    for (const name of watch.names) {
      const text = await readMarker(ctx, `${watch.dir}/${name}`);
      if (text !== undefined && /^[0-9]+\s*$/.test(text)) processes.push({ pid: Number(text), role: name === 'leader' ? 'the command itself' : `its ${name}` });
    }
    throw await survivorsFailure(ctx, processes, watch.dir, 'run() aborted once ready', error);
  }
  checkErrorCode(error, 'ABORTED', 'run() aborted once ready');
  return { result: (error as { result?: ExecResult }).result, abortedAt, termAt, endedAt, hostLag, seen };
}

/**
 * Once the abort fired, the sandbox's own termination settings bound how long
 * run() may stay pending: the grace period, the kill wait, and the delivery
 * bound for the result (plus any stall of the kit's own process). An adapter
 * that ignores the abort fails then, saying so, instead of at the case's
 * time limit.
 */
async function settledAfterAbort(ctx: CaseContext, running: Promise<unknown>, aborted: Promise<void>): Promise<void> {
  running.catch(() => undefined);
  const first = await Promise.race([running.then(() => 'settled' as const, () => 'settled' as const), aborted.then(() => 'aborted' as const)]);
  if (first === 'settled') return;
  const { graceMs, killWaitMs, source } = termination(ctx);
  const within = graceMs + killWaitMs + (await deliveryBound(ctx));
  if ((await settledWithinLag(running, within)) !== 'pending') return;
  throw new ConformanceFailure(
    `run() aborted once ready had not settled ${within} ms after the abort, past the grace period (${graceMs} ms) and the kill wait (${killWaitMs} ms) of ${source} and the delivery bound: the abort did not end it`,
  );
}
