import type { ExecResult } from '@sandstream/types';
import { check, checkErrorCode, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { bound, roundTrip, termination } from './support/observe.js';

const decoder = new TextDecoder();

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
      // The command says when SIGTERM arrives and carries on: only SIGKILL ends it.
      const script = 'trap "echo term" TERM; echo ready; while :; do sleep 0.01; done';
      const controller = new AbortController();
      let seen = '';
      let termAt = 0;
      const error = await rejectionOf(
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
      const endedAt = performance.now();
      checkErrorCode(error, 'ABORTED', 'run() aborted once ready');
      const result = (error as { result?: ExecResult }).result;
      check(termAt > 0, 'the command never reported the SIGTERM that termination must begin with');
      check(result?.signal === 'SIGKILL', `a command that outlives SIGTERM should end by SIGKILL (got ${result?.exitCode}/${result?.signal})`);
      // From the command's own report of SIGTERM to the end: the report and the end travel the same
      // way back, so load on either side of the link does not shift the spacing much; a round trip of leeway.
      const spacing = endedAt - termAt;
      check(
        spacing >= graceMs * 0.8 - rtt,
        `SIGKILL came ${Math.round(spacing)} ms after SIGTERM reached the command, sooner than the grace period (${graceMs} ms, from ${source})`,
      );
      check(
        spacing - rtt <= graceMs + slack,
        `SIGKILL came ${Math.round(spacing)} ms after SIGTERM reached the command, later than the grace period (${graceMs} ms, from ${source}) plus ${slack} ms`,
      );
      check(read() === before, `the sandbox's termination settings changed while it was in use: ${read()} after ${before}`);
    },
  }),
];
