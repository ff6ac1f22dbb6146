import { check } from '../assert.js';
import { defineCase } from '../case.js';
import { runThenAbortWhenReady } from './support/abort-when-ready.js';
import { describeGraceTiming, GRACE_LOOP, GRACE_TRAP, graceEvidence, mayHaveLived } from './support/grace-evidence.js';
import { bound, roundTrip, scratch, termination } from './support/observe.js';

/** The sandbox's termination settings: SS-TERM-*. */
export const terminationSettingsCases = [
  defineCase({
    id: 'termination.settings',
    title: '"A sandbox that states termination MUST terminate commands with exactly those settings": SIGKILL no sooner than graceMs after SIGTERM and within graceMs plus a bounded delay, and the settings do not change',
    requirements: ['SS-TERM-1'],
    runsAlone: 'it measures the grace period to a fraction of its length',
    async run(ctx) {
      const read = (): string => JSON.stringify((ctx.sandbox as { termination?: unknown }).termination ?? null);
      const before = read();
      const { graceMs, source } = termination(ctx);
      const rtt = await roundTrip(ctx);
      const slack = await bound(ctx, 1_000);
      // The command says when SIGTERM arrives and carries on: only SIGKILL ends it. Its ticks after
      // SIGTERM and its shell's stamps tell, on the sandbox's own clock, what the kit's clock cannot
      // (support/grace-evidence.ts). It creates "printed" right after "ready", so output held back is
      // told from a slow start.
      const dir = await scratch(ctx);
      const script = `${GRACE_TRAP}; echo ready; : > "$1/printed"; ${GRACE_LOOP}`;
      const { result, termAt, endedAt, hostLag, seen } = await runThenAbortWhenReady(ctx, ['sh', '-c', script, 'sh', dir], undefined, { ctx, marker: `${dir}/printed` }, 60_000);
      check(termAt > 0, 'the command never reported the SIGTERM that termination must begin with');
      check(result?.signal === 'SIGKILL', `a command that outlives SIGTERM should end by SIGKILL (got ${result?.exitCode}/${result?.signal})`);
      // From the command's own report of SIGTERM to the end: the report and the end travel the same
      // way back, so load on either side of the link does not shift the spacing much; a round trip of
      // leeway, and the host's own measured stall.
      const spacing = endedAt - termAt;
      const measured = { spacingMs: spacing, roundTripMs: rtt, hostLagMs: hostLag };
      const evidence = graceEvidence(seen);
      const timing = `(${graceMs} ms, from ${source}; ${describeGraceTiming(measured, evidence)})`;
      check(
        mayHaveLived(graceMs * 0.8, measured, evidence),
        `SIGKILL came ${Math.round(spacing)} ms after SIGTERM reached the command, sooner than the grace period ${timing}`,
      );
      check(
        spacing - rtt - hostLag <= graceMs + slack,
        `SIGKILL came ${Math.round(spacing)} ms after SIGTERM reached the command, later than the grace period plus ${slack} ms ${timing}`,
      );
      check(read() === before, `the sandbox's termination settings changed while it was in use: ${read()} after ${before}`);
    },
  }),
];
