import { check, checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { bound } from './support/observe.js';
import { COUNT } from './support/sequence.js';

// 1..20000, one per line: 108894 bytes, every prefix distinct from every other part.
const NUMBERED_SCRIPT = `awk 'BEGIN { for (i = 1; i <= ${COUNT}; i++) print i }'`;
const NUMBERED = Array.from({ length: COUNT }, (_, i) => `${i + 1}\n`).join('');

/** run() with maxOutputBytes: SS-CAPOUT-1. */
export const outputCapCases = [
  defineCase({
    id: 'output-cap.truncation',
    title: '"run() MUST keep at most maxOutputBytes bytes per stream and set that stream\'s truncation flag when more was written": and keeps draining the command past the cap',
    requirements: ['SS-CAPOUT-1'],
    timeoutMs: 90_000,
    async run(ctx) {
      // Distinct bytes (numbered lines), so what is kept shows which part it is.
      const result = await ctx.sandbox.run(['sh', '-c', `${NUMBERED_SCRIPT}; printf tiny >&2`], { maxOutputBytes: 1000 });
      check(result.stdout.byteLength === 1000, `stdout kept ${result.stdout.byteLength} bytes under a 1000-byte cap`);
      checkEqual(Buffer.from(result.stdout).toString('latin1'), NUMBERED.slice(0, 1000), 'the capped stdout (the first 1000 bytes written)');
      check(result.stdoutTruncated === true, 'stdoutTruncated is false although stdout exceeded the cap');
      checkEqual(result.stderrText, 'tiny', 'stderr under the cap');
      check(result.stderrTruncated === false, 'stderrTruncated is true although stderr stayed under the cap');
      // 16 MiB, far past any pipe buffer: the command finishes only if it is
      // drained. An adapter that stops draining never finishes, so the bound
      // only has to outlast a starved machine (a CI run with every package's
      // suite beside it once took over 20 s), not to measure speed.
      const big = await ctx.sandbox.run(['head', '-c', '16777216', '/dev/zero'], { maxOutputBytes: 1024, timeout: await bound(ctx, 60_000) });
      check(!big.timedOut && big.exitCode === 0, `a command writing past the cap was not drained (exit ${big.exitCode}/${big.signal}, timedOut ${big.timedOut})`);
      check(big.stdout.byteLength === 1024 && big.stdoutTruncated, 'the capped result is wrong');
      const exact = await ctx.sandbox.run(['head', '-c', '1000', '/dev/zero'], { maxOutputBytes: 1000 });
      check(exact.stdout.byteLength === 1000 && !exact.stdoutTruncated, 'output of exactly the cap is flagged as truncated or cut');
    },
  }),
];
