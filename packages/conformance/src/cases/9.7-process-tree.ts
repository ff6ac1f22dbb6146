import type { ExecResult } from '@sandstream/types';
import { check } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import {
  bound,
  expectAlive,
  expectGoneNow,
  explainingSurvivors,
  readMarker,
  readPid,
  scratch,
  termination,
  touch,
  type Watched,
} from './support/observe.js';


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

/**
 * A command whose leader exits by itself while what it started lives on, under
 * run() and under stream(): SIGTERM first to what it left, SIGKILL only after
 * the grace period, and the result waiting for all of it: SS-TEAR-6, SS-TEAR-10.
 */
export const processTreeCases = [
  defineCase({
    id: 'teardown.leader-exit',
    title: '"nothing it started may outlive its result": when the command exits by itself under run(), what it started gets SIGTERM first and SIGKILL only after the grace period',
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
    title: '"the command\'s result MUST NOT be reported while any of them lives": under stream(), a command that exits by itself ends as under run(), SIGTERM first to what it left and SIGKILL after the grace period',
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
];
