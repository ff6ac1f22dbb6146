import { check } from '../assert.js';
import { defineCase } from '../case.js';
import { bound, disposeExplained, expectGoneNow, readMarker, readPid, roundTrip, scratch, termination, type Watched } from './support/observe.js';
import { runThenAbortWhenReady } from './support/abort-when-ready.js';
import { describeGraceTiming, GRACE_LOOP, GRACE_TRAP, graceEvidence, mayHaveLived } from './support/grace-evidence.js';
import { untilReady } from './support/tree.js';

/** Teardown's termination sequence, timed: SIGTERM first, SIGKILL after the grace period: SS-TEAR-7. */
export const terminationSequenceCases = [
  defineCase({
    id: 'teardown.sigterm-first',
    title: '"Termination MUST send SIGTERM first and SIGKILL only after the grace period, so that a SIGTERM handler gets to run": at the abort of run() and at disposal',
    requirements: ['SS-TEAR-7'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const script = 'trap \'echo handled > "$1/term"; exit 7\' TERM; echo ready; : > "$1/printed"; while :; do sleep 0.05; done';
      const handled = async (how: string): Promise<void> => {
        check((await readMarker(ctx, `${dir}/term`))?.trim() === 'handled', `${how}: the command's SIGTERM handler never ran; was it killed outright?`);
        await ctx.exec(['rm', '-f', `${dir}/term`]);
      };
      // Aborting run() once the handler is installed starts the termination sequence at a known point.
      const { result: aborted } = await runThenAbortWhenReady(ctx, ['sh', '-c', script, 'sh', dir], undefined, { ctx, marker: `${dir}/printed` });
      await handled('after run() was aborted');
      check(aborted?.exitCode === 7, `the handler's exit code 7 was not reported by run() (got ${aborted?.exitCode}/${aborted?.signal})`);
      if (!ctx.sandbox.capabilities.streaming) return;
      await ctx.exec(['rm', '-f', `${dir}/printed`]);
      const proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir]);
      await untilReady(proc[Symbol.asyncIterator](), { ctx, marker: `${dir}/printed` });
      await proc[Symbol.asyncDispose]();
      await handled('after disposal');
      const result = await proc.wait();
      check(result.exitCode === 7, `the handler's exit code 7 was not reported (got ${result.exitCode}/${result.signal})`);
    },
  }),
  defineCase({
    id: 'teardown.sigkill-after-grace',
    title: '"a command that ignores SIGTERM MUST be gone within the grace period plus a bounded delay": and is not killed before the grace period, at the abort of run() and at disposal',
    requirements: ['SS-TEAR-7', 'SS-TEAR-6'],
    runsAlone: 'it measures the grace period to a fraction of its length',
    async run(ctx) {
      // The command reports SIGTERM and carries on; its child ignores SIGTERM. Only SIGKILL ends them.
      // Its ticks after SIGTERM and its shell's stamps tell, on the sandbox's own clock, what the kit's
      // clock cannot (support/grace-evidence.ts).
      const script = `${GRACE_TRAP}; echo $$ > "$1/leader"; ( trap "" TERM; while :; do sleep 0.05; done ) & echo $! > "$1/child"; echo ready; : > "$1/printed"; ${GRACE_LOOP}`;
      const { graceMs, killWaitMs, source } = termination(ctx);
      const slack = await bound(ctx, 1_000);
      const rtt = await roundTrip(ctx);
      // Measured from the command's own report of SIGTERM to the end: the report and the end each
      // travel the same way back, so load on either side of the link does not shift the spacing much.
      // A stall of this process (hostLag) moves when it saw the report and the end, not when they
      // happened. Where the report still came late, or the trap ran late, the sandbox's own readings
      // show the time the command may have lived after SIGTERM.
      const checkTimely = (termAt: number, endedAt: number, hostLag: number, seen: string, how: string): void => {
        check(termAt > 0, `${how}: the command never reported SIGTERM; was it killed outright?`);
        const spacing = endedAt - termAt;
        const measured = { spacingMs: spacing, roundTripMs: rtt, hostLagMs: hostLag };
        const evidence = graceEvidence(seen);
        const timing = `(${graceMs} ms, from ${source}; ${describeGraceTiming(measured, evidence)})`;
        check(mayHaveLived(graceMs * 0.8, measured, evidence), `${how}: the command was killed ${Math.round(spacing)} ms after SIGTERM reached it, before the grace period ${timing}`);
        check(spacing - hostLag <= graceMs + killWaitMs + slack, `${how}: the command was killed ${Math.round(spacing)} ms after SIGTERM reached it, beyond the grace period and the kill wait ${timing}`);
      };
      const recorded = async (dir: string): Promise<Watched[]> => [
        { pid: await readPid(ctx, `${dir}/leader`, 'the command'), role: 'the command itself' },
        { pid: await readPid(ctx, `${dir}/child`, 'its child'), role: 'a child of the command' },
      ];
      const checkGone = async (dir: string, how: string): Promise<void> => expectGoneNow(ctx, await recorded(dir), dir, how);
      const underRun = async (): Promise<void> => {
        const dir = await scratch(ctx);
        const { result: aborted, termAt, endedAt, hostLag, seen } = await runThenAbortWhenReady(ctx, ['sh', '-c', script, 'sh', dir], { dir, names: ['leader', 'child'] }, { ctx, marker: `${dir}/printed` });
        checkTimely(termAt, endedAt, hostLag, seen, 'after run() was aborted');
        check(aborted?.signal === 'SIGKILL', `a command that outlived SIGTERM should end by SIGKILL (got ${aborted?.exitCode}/${aborted?.signal})`);
        await checkGone(dir, 'after SIGKILL at the abort of run()');
      };
      const underStream = async (): Promise<void> => {
        const dir = await scratch(ctx);
        const proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir]);
        const iterator = proc[Symbol.asyncIterator]();
        await untilReady(iterator, { ctx, marker: `${dir}/printed` });
        const processes = await recorded(dir);
        // Disposal ends the iteration, so the command's report of SIGTERM is not seen here: the
        // spacing is measured from the call, which only errs towards a longer one.
        const disposing = performance.now();
        await disposeExplained(ctx, proc, processes, dir);
        const elapsed = performance.now() - disposing;
        check(elapsed >= graceMs * 0.8, `disposal: the command was killed ${Math.round(elapsed)} ms after disposal began, before the grace period (${graceMs} ms, from ${source})`);
        check(elapsed <= graceMs + killWaitMs + slack, `disposal: teardown took ${Math.round(elapsed)} ms, beyond the grace period (${graceMs} ms, from ${source}) and the kill wait`);
        const result = await proc.wait();
        check(result.signal === 'SIGKILL', `a command that outlived SIGTERM should end by SIGKILL (got ${result.exitCode}/${result.signal})`);
        await checkGone(dir, 'after SIGKILL at disposal');
      };
      // The two ways wait out their grace periods side by side, each with a command of its own;
      // run()'s failure is reported first, as when they ran one after the other.
      await bothInOrder(underRun(), ctx.sandbox.capabilities.streaming ? underStream() : Promise.resolve());
    },
  }),
];

/** Waits for both; rejects with the first one's reason if it rejected, else with the second's. */
async function bothInOrder(first: Promise<void>, second: Promise<void>): Promise<void> {
  const [a, b] = await Promise.allSettled([first, second]);
  if (a.status === 'rejected') throw a.reason;
  if (b.status === 'rejected') throw b.reason;
}
