import { hasCapability, TransportError, type ExecResult } from '@sandstream/types';
import { check, describeError, HarnessError } from '../assert.js';
import { defineCase } from '../case.js';
import { bound, readMarker, scratch } from './support/observe.js';
import { killTree, named, openLookout, ownerTree, scanTree, type Seen } from './support/owner.js';
import { crashOwner, ownerLossOf, provePresence } from './support/owner-crash.js';

/** Owner loss: SS-OWNER-* (spec 1.4). */
export const ownerLossCases = [
  defineCase({
    id: 'owner.bound-stated',
    title: '"A sandbox MUST state termination.ownerLossMs, the bound of SS-OWNER-1 in milliseconds": a number no smaller than graceMs, the same before and after a command',
    requirements: ['SS-OWNER-2'],
    async run(ctx) {
      const read = (): unknown => (ctx.sandbox as { termination?: { ownerLossMs?: unknown } }).termination;
      const stated = read() as { graceMs?: unknown; ownerLossMs?: unknown } | undefined;
      check(stated !== undefined && stated !== null, 'the sandbox states no `termination` at all, so no `ownerLossMs`: it is an implementation of 1.0 at most');
      const { ownerLossMs, graceMs } = stated;
      check(ownerLossMs !== undefined, 'the sandbox states no `termination.ownerLossMs`, the bound within which a foreground command\'s tree is gone once its owner is lost: it is an implementation of 1.3 at most');
      check(typeof ownerLossMs === 'number' && Number.isFinite(ownerLossMs) && ownerLossMs >= 0, `termination.ownerLossMs must be a non-negative number of ms; it is ${JSON.stringify(ownerLossMs)}`);
      check(typeof graceMs !== 'number' || ownerLossMs >= graceMs, `termination.ownerLossMs (${ownerLossMs} ms) is smaller than the grace period (${String(graceMs)} ms), which a command that ignores SIGTERM is given in full`);
      await ctx.exec(['sh', '-c', 'exit 0']);
      const after = (read() as { ownerLossMs?: unknown } | undefined)?.ownerLossMs;
      check(after === ownerLossMs, `termination.ownerLossMs changed during the sandbox's lifetime: ${ownerLossMs} ms, then ${JSON.stringify(after)} after a command`);
    },
  }),
  defineCase({
    id: 'owner.crash',
    title: '"A foreground command MUST NOT outlive its owner": an owner process killed with SIGKILL while its command tree runs (under stream(), or run() without streaming); the whole tree is gone within termination.ownerLossMs, SIGTERM first',
    requirements: ['SS-OWNER-1'],
    runsAlone: 'it starts a second Node.js process and measures how soon a tree is gone against the bound of owner loss',
    timeoutMs: 90_000,
    async run(ctx) {
      // A foreground command of stream(), or of run() where the adapter has no streaming.
      await crashOwner(ctx, hasCapability(ctx.sandbox.capabilities, 'streaming') ? 'stream' : 'run', (token, dir) => ownerTree(token, dir));
    },
  }),
  defineCase({
    id: 'owner.link-lost',
    title: '"A foreground command MUST NOT outlive its owner": its link to the environment cut as a proxy would cut it (the sever hook) and not re-established, the whole tree is gone within termination.ownerLossMs, SIGTERM first, and the Process settles',
    requirements: ['SS-OWNER-1'],
    needs: ['streaming'],
    needsHooks: [{ hook: 'sever', without: 'an adapter whose commands hold no link to lose (local processes) has none to cut' }],
    runsAlone: 'it measures how soon a tree is gone against the bound of owner loss',
    timeoutMs: 90_000,
    async run(ctx) {
      const token = ctx.token('link');
      const dir = await scratch(ctx);
      const look = await openLookout(ctx);
      const proc = ctx.sandbox.stream(ownerTree(token, dir, true));
      let stdout = '';
      const decoder = new TextDecoder();
      // Read throughout, so the command never waits on a full pipe; how the reading ends, and then
      // wait(), is how the Process settles. (wait() alone would discard the output the case reads.)
      const settled: Promise<{ result: ExecResult } | { error: unknown }> = (async () => {
        for await (const chunk of proc) if (chunk.stream === 'stdout') stdout += decoder.decode(chunk.data, { stream: true });
        return { result: await proc.wait() };
      })().catch((error: unknown) => ({ error }));
      try {
        await proc.started();
        await provePresence(ctx, look, token, dir);
        const cut = await ctx.sever!(proc);
        if (cut === 0) throw new HarnessError('the sever hook cut no link to the foreground command the kit reads: nothing would be tested');
        const cutAt = performance.now();
        const { ms, source } = ownerLossOf(ctx);
        const within = await bound(ctx, ms);
        let left: Seen[];
        for (;;) {
          left = await scanTree(look.exec, token);
          if (left.length === 0 || performance.now() - cutAt > within) break;
          await ctx.sleep(25);
        }
        if (left.length > 0) {
          // The tree runs on: that keeps the rule only if the link is back. The command prints a
          // word once asked, and a re-established Process delivers it.
          const after = Math.round(performance.now() - cutAt);
          await ctx.exec(['sh', '-c', ': > "$1/ping"', 'sh', dir]);
          await ctx.poll(
            async () => (stdout.includes('pong') ? true : undefined),
            await bound(ctx, 5_000),
            `the link to a foreground command was cut ${after} ms ago and its tree still runs: ${named(left)} ` +
              `(the bound is ${ms} ms, from ${source}${within > ms ? `, ${within} ms on this backend's measured round trip` : ''}); ` +
              `and the link is not re-established either: the Process did not deliver what the command printed since (its standard output so far: ${JSON.stringify(stdout.slice(-100))})`,
          );
          return;
        }
        const outcome = await Promise.race([settled, ctx.sleep(await bound(ctx, ctx.killWaitMs)).then(() => undefined)]);
        check(outcome !== undefined, 'the link to a foreground command was cut and its tree is gone, but the Process never settled: wait() neither resolved nor rejected');
        if ('error' in outcome!) {
          check(outcome.error instanceof TransportError, `a foreground Process whose link was lost must settle with its result or reject with TransportError; it rejected with ${describeError(outcome.error)}`);
        }
        const term = await readMarker(ctx, `${dir}/background-term`);
        check(term?.includes('term') === true, 'the tree of a foreground command whose link was lost was ended without SIGTERM first: its background child, which records SIGTERM, never recorded it (section 9.8)');
      } finally {
        await proc[Symbol.asyncDispose]().catch(() => undefined);
        await killTree(ctx, token);
        await look.close();
      }
    },
  }),
];
