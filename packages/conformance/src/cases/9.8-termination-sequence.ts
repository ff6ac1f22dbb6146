/**
 * The termination sequence, timed (SS-TEAR-6, SS-TEAR-7, SS-TEAR-10): a
 * command whose leader exits by itself while what it started lives on, under
 * run() and under stream(), and a command ended by teardown: SIGTERM first,
 * so a handler runs, and SIGKILL only after the grace period, with the
 * result waiting for all of it. Part of `teardownCases`, in order.
 */
import type { ExecResult } from '@sandstream/types';
import { check } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import {
  bound,
  disposeExplained,
  expectAlive,
  expectGoneNow,
  explainingSurvivors,
  readMarker,
  readPid,
  roundTrip,
  scratch,
  termination,
  touch,
  type Watched,
} from './support/observe.js';
import { runThenAbortWhenReady } from './support/abort-when-ready.js';
import { untilReady } from './support/tree.js';

const decoder = new TextDecoder();

function checkEqualText(actual: string, expected: string, what: string): void {
  check(actual === expected, `${what}: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
}

// The command leaves three processes behind when it exits by itself, once the
// kit created "go": two that record the SIGTERM they get and leave (one still
// holding the output pipes, one not), and one that ignores SIGTERM, so only
// SIGKILL after the grace period ends it.
const LEADER_EXIT_SCRIPT = [
  'D=$1',
  '( trap \'echo term >> "$D/holder-term"; exit 0\' TERM; while :; do sleep 0.05; done ) & echo $! > "$D/holder"',
  '( trap \'echo term >> "$D/detached-term"; exit 0\' TERM; while :; do sleep 0.05; done ) >/dev/null 2>&1 & echo $! > "$D/detached"',
  '( trap "" TERM; while :; do sleep 0.05; done ) >/dev/null 2>&1 & echo $! > "$D/stubborn"',
  'while [ ! -f "$D/go" ]; do sleep 0.01; done',
  'echo done',
].join('\n');

const LEFT_BEHIND: ReadonlyArray<readonly [string, string]> = [
  ['holder', 'a background child holding the output pipe'],
  ['detached', 'a background child without the output pipe'],
  ['stubborn', 'a background child ignoring SIGTERM'],
];

/**
 * Lets the leader of LEADER_EXIT_SCRIPT exit once its children are seen
 * alive, then checks what the result may claim: nothing outlives it, the
 * leftovers got SIGTERM first, and SIGKILL came only after the grace period.
 */
async function leaderExit(ctx: CaseContext, dir: string, settle: () => Promise<ExecResult>, how: string): Promise<ExecResult> {
  const left: Watched[] = [];
  for (const [name, role] of LEFT_BEHIND) left.push({ pid: await readPid(ctx, `${dir}/${name}`, role), role });
  await expectAlive(ctx, left, dir);
  const { graceMs, killWaitMs, source } = termination(ctx);
  // The leader exits at some point while "go" is being created: before that call for the lower
  // bound, after it for the upper one, so neither a slow helper nor a fast one misleads.
  const goBefore = performance.now();
  await touch(ctx, `${dir}/go`);
  const goAfter = performance.now();
  const result = await explainingSurvivors(ctx, left, dir, `${how} after the command exited by itself`, settle);
  const settledAt = performance.now();
  await expectGoneNow(ctx, left, dir, `${how}: the result of a command whose leader exited was reported while what it started still runs`);
  for (const name of ['holder', 'detached']) {
    const record = await readMarker(ctx, `${dir}/${name}-term`);
    check(
      record?.trim() === 'term',
      `${how}: ${LEFT_BEHIND.find(([n]) => n === name)![1]} was ended without SIGTERM first (its TERM handler never ran)`,
    );
  }
  const slack = await bound(ctx, 1_000);
  const atMost = settledAt - goBefore;
  const atLeast = settledAt - goAfter;
  check(
    atMost >= graceMs * 0.8,
    `${how}: the child ignoring SIGTERM was killed at most ${Math.round(atMost)} ms after the leader exited, before the grace period (${graceMs} ms, from ${source})`,
  );
  check(
    atLeast <= graceMs + killWaitMs + slack,
    `${how}: the result came ${Math.round(atLeast)} ms after the leader exited, beyond the grace period (${graceMs} ms, from ${source}) plus the kill wait`,
  );
  return result;
}

export const sequenceCases = [
  defineCase({
    id: 'teardown.leader-exit',
    title:
      'when the command exits by itself, what it started gets SIGTERM first, SIGKILL only after the grace period, ' +
      'and the result is not reported while any of it lives',
    requirements: ['SS-TEAR-6', 'SS-TEAR-10'],
    runsAlone: 'it measures the grace period to a fraction of its length',
    async run(ctx) {
      const dir = await scratch(ctx);
      const running = ctx.sandbox.run(['sh', '-c', LEADER_EXIT_SCRIPT, 'sh', dir], { timeout: 60_000 });
      running.catch(() => undefined);
      const result = await leaderExit(ctx, dir, () => running, 'run()');
      check(!result.timedOut, 'a background child holding the output pipe kept run() waiting until the timeout');
      check(result.exitCode === 0, `the command itself should exit 0 (got ${result.exitCode}/${result.signal})`);
      check(decoder.decode(result.stdout) === 'done\n', 'the output of a command with a background child was not delivered');
    },
  }),
  defineCase({
    id: 'teardown.leader-exit-stream',
    title: 'under stream(), a command that exits by itself ends as under run(): SIGTERM first to what it left, SIGKILL after the grace period, nothing outliving the result',
    requirements: ['SS-TEAR-6', 'SS-TEAR-10'],
    needs: ['streaming'],
    runsAlone: 'it measures the grace period to a fraction of its length',
    async run(ctx) {
      const dir = await scratch(ctx);
      await using proc = ctx.sandbox.stream(['sh', '-c', LEADER_EXIT_SCRIPT, 'sh', dir], { timeout: 60_000 });
      // A loop reads while the leader exits, as a caller's would.
      const reading = (async () => {
        let text = '';
        for await (const chunk of proc) if (chunk.stream === 'stdout') text += decoder.decode(chunk.data);
        return text;
      })();
      reading.catch(() => undefined);
      const result = await leaderExit(ctx, dir, async () => {
        await reading;
        return proc.wait();
      }, 'stream()');
      check(result.exitCode === 0, `the command itself should exit 0 (got ${result.exitCode}/${result.signal})`);
      checkEqualText(await reading, 'done\n', 'the streamed output of a command with background children');
    },
  }),
  defineCase({
    id: 'teardown.sigterm-first',
    title: 'teardown sends SIGTERM first, so a handler gets to run before SIGKILL',
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
    title: 'a command that outlives SIGTERM is killed after the grace period, not before',
    requirements: ['SS-TEAR-7', 'SS-TEAR-6'],
    runsAlone: 'it measures the grace period to a fraction of its length',
    async run(ctx) {
      // The command reports SIGTERM and carries on; its child ignores SIGTERM. Only SIGKILL ends them.
      const script = 'trap "echo term" TERM; echo $$ > "$1/leader"; ( trap "" TERM; while :; do sleep 0.05; done ) & echo $! > "$1/child"; echo ready; : > "$1/printed"; while :; do sleep 0.01; done';
      const { graceMs, killWaitMs, source } = termination(ctx);
      const slack = await bound(ctx, 1_000);
      const rtt = await roundTrip(ctx);
      // Measured from the command's own report of SIGTERM to the end: the report and the end each
      // travel the same way back, so load on either side of the link does not shift the spacing.
      // A stall of this process (hostLag) moves when it saw the report and the end, not when they happened.
      const checkTimely = (termAt: number, endedAt: number, hostLag: number, how: string): void => {
        check(termAt > 0, `${how}: the command never reported SIGTERM; was it killed outright?`);
        const spacing = endedAt - termAt;
        const timing = `(${graceMs} ms, from ${source}; round trip ${Math.round(rtt)} ms, host stalled up to ${Math.round(hostLag)} ms)`;
        check(spacing + rtt + hostLag >= graceMs * 0.8, `${how}: the command was killed ${Math.round(spacing)} ms after SIGTERM reached it, before the grace period ${timing}`);
        check(spacing - hostLag <= graceMs + killWaitMs + slack, `${how}: the command was killed ${Math.round(spacing)} ms after SIGTERM reached it, beyond the grace period and the kill wait ${timing}`);
      };
      const recorded = async (dir: string): Promise<Watched[]> => [
        { pid: await readPid(ctx, `${dir}/leader`, 'the command'), role: 'the command itself' },
        { pid: await readPid(ctx, `${dir}/child`, 'its child'), role: 'a child of the command' },
      ];
      const checkGone = async (dir: string, how: string): Promise<void> => expectGoneNow(ctx, await recorded(dir), dir, how);
      const underRun = async (): Promise<void> => {
        const dir = await scratch(ctx);
        const { result: aborted, termAt, endedAt, hostLag } = await runThenAbortWhenReady(ctx, ['sh', '-c', script, 'sh', dir], { dir, names: ['leader', 'child'] }, { ctx, marker: `${dir}/printed` });
        checkTimely(termAt, endedAt, hostLag, 'after run() was aborted');
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
