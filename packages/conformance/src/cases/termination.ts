import type { ExecResult } from '@sandstream/types';
import { check, checkErrorCode, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { bound, roundTrip, termination, watchHostLag } from './support/observe.js';

const decoder = new TextDecoder();
/** The command's tick after SIGTERM: one pass of its loop sleeps at least this long. */
const TICK_MS = 10;

/** The sandbox's termination settings: SS-TERM-*. */
export const terminationCases = [
  defineCase({
    id: 'termination.settings',
    title: 'the sandbox terminates with the settings it states: SIGKILL no sooner than graceMs after SIGTERM and within graceMs plus a bounded delay, and the settings do not change',
    requirements: ['SS-TERM-1'],
    runsAlone: 'it measures the grace period to a fraction of its length',
    async run(ctx) {
      const read = (): string => JSON.stringify((ctx.sandbox as { termination?: unknown }).termination ?? null);
      const before = read();
      const { graceMs, source } = termination(ctx);
      const rtt = await roundTrip(ctx);
      const slack = await bound(ctx, 1_000);
      // The command says when SIGTERM arrives and carries on: only SIGKILL ends it. After SIGTERM it
      // writes a tick per pass of at least TICK_MS, so the ticks that reach us prove, on the sandbox's
      // own clock, that at least ticks × TICK_MS passed before SIGKILL, whatever the host was doing.
      const script = `trap "echo term; t=1" TERM; echo ready; while :; do sleep ${TICK_MS / 1000}; if [ -n "$t" ]; then echo tick; fi; done`;
      const controller = new AbortController();
      let seen = '';
      let termAt = 0;
      const lag = watchHostLag();
      let hostLag = 0;
      let error: unknown;
      try {
        error = await rejectionOf(
          ctx.sandbox.run(['sh', '-c', script], {
            signal: controller.signal,
            timeout: 60_000,
            onOutput: (chunk) => {
              seen += decoder.decode(chunk.data);
              if (termAt === 0 && seen.includes('term')) termAt = performance.now();
              if (!controller.signal.aborted && seen.includes('ready')) controller.abort(new Error('the case ends the command'));
            },
          }),
          'run() aborted once ready',
        );
      } finally {
        // A stall of this process moves when it saw SIGTERM's report and the end, not when they happened.
        hostLag = lag.stop();
      }
      const endedAt = performance.now();
      checkErrorCode(error, 'ABORTED', 'run() aborted once ready');
      const result = (error as { result?: ExecResult }).result;
      check(termAt > 0, 'the command never reported the SIGTERM that termination must begin with');
      check(result?.signal === 'SIGKILL', `a command that outlives SIGTERM should end by SIGKILL (got ${result?.exitCode}/${result?.signal})`);
      // From the command's own report of SIGTERM to the end: the report and the end travel the same
      // way back, so load on either side of the link does not shift the spacing much; a round trip of
      // leeway, and the host's own measured stall.
      const spacing = endedAt - termAt;
      const ticked = (seen.slice(seen.indexOf('term')).match(/tick/g)?.length ?? 0) * TICK_MS;
      const timing = `(${graceMs} ms, from ${source}; round trip ${Math.round(rtt)} ms, host stalled up to ${Math.round(hostLag)} ms, the command counted ${ticked} ms)`;
      check(
        spacing + rtt + hostLag >= graceMs * 0.8 || ticked >= graceMs * 0.8,
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
