/**
 * `started()` taken on evidence. A Process whose start the adapter never confirms (a start it
 * retried and is still waiting on, say) would hold a case until its limit; once the kit sees the
 * command running in the sandbox, by a token of its argv in a process's command line, `started()`
 * is due within the delivery bound, and its absence is the adapter's failure, found in seconds.
 * The kit then ends the case's processes (`ctx.endMarked()`): the pending start may wait for one.
 */
import type { Process } from '@sandstream/types';
import { ConformanceFailure } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { findMarked } from '../../sandbox-scripts.js';
import { deliveryBound, settledWithin, settledWithinLag } from '../../timing.js';

/** The kit's tokens (`ctx.token()`) in an argv. */
const TOKEN = /sandstream-[A-Za-z0-9-]*?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/**
 * `proc.started()`, taken on evidence: once the kit sees the command running (a process whose
 * command line carries a token of `argv`), started() is due within the delivery bound. Without a
 * token in `argv`, or where the kit cannot look, it is `proc.started()`. `what` names the Process
 * in the failure ("a background command").
 */
export async function startedOnEvidence(ctx: CaseContext, proc: Process, argv: readonly string[], what = 'a background command'): Promise<void> {
  const started = proc.started();
  started.catch(() => undefined);
  const tokens = [...new Set(argv.flatMap((arg) => arg.match(TOKEN) ?? []))];
  const look = await deliveryBound(ctx);
  for (;;) {
    const outcome = await settledWithin(started, look);
    if (outcome !== 'pending') {
      if (outcome.rejected) throw outcome.reason;
      return;
    }
    if (tokens.length === 0) return void (await started);
    const running = await findMarked(ctx.exec, tokens);
    if (running === undefined) return void (await started);
    if (running.length === 0) continue;
    const seenAt = performance.now();
    const after = await settledWithinLag(started, await deliveryBound(ctx));
    if (after === 'pending') {
      const waited = Math.round(performance.now() - seenAt);
      const ended = await ctx.endMarked();
      throw new ConformanceFailure(
        `started() of ${what} did not settle, though the command was running in the sandbox (pid ${running.join(', ')}, found by its token) ${waited} ms before` +
          (ended.length === 0 ? '' : `; the kit then ended the case's processes (pid ${ended.join(', ')})`),
      );
    }
    if (after.rejected) throw after.reason;
    return;
  }
}
