import type { Process } from '@sandstream/types';
import { check, checkErrorCode, ConformanceFailure, HarnessError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { bound, readMarker, scratch } from './support/observe.js';
import { untilReady } from './support/tree.js';

// The command and a child of it each record the USR1 they receive, so a signal's
// arrival at the leader and at the rest of the tree is visible in the sandbox.
const USR1_SCRIPT = [
  '( trap \'echo usr1 >> "$1/$2-child"\' USR1; trap \'echo usr2 >> "$1/$2-child"\' USR2; echo x > "$1/$2-child-ready"; while :; do sleep 0.05; done ) &',
  'trap \'echo usr1 >> "$1/$2"\' USR1; trap \'echo usr2 >> "$1/$2"\' USR2',
  'while [ ! -f "$1/$2-child-ready" ]; do sleep 0.01; done',
  'echo ready; : > "$1/$2-printed"',
  'while :; do sleep 0.05; done',
].join('\n');

// The leader and a child each count a heartbeat in a file every 50 ms.
const BEATING_SCRIPT = [
  '( i=0; while :; do i=$((i+1)); echo $i > "$1/child-beat"; sleep 0.05; done ) &',
  'i=0; echo $i > "$1/leader-beat"',
  'while [ ! -s "$1/child-beat" ]; do sleep 0.01; done',
  'echo ready; : > "$1/printed"',
  'while :; do i=$((i+1)); echo $i > "$1/leader-beat"; sleep 0.05; done',
].join('\n');

// Reads both heartbeats, lets 0.3 s pass on the sandbox's own clock, reads them again.
const BEATING_PROBE = [
  'a=$(cat "$1/leader-beat" 2>/dev/null); b=$(cat "$1/child-beat" 2>/dev/null)',
  'sleep 0.3',
  'c=$(cat "$1/leader-beat" 2>/dev/null); d=$(cat "$1/child-beat" 2>/dev/null)',
  'printf "%s %s %s %s|" "$a" "$c" "$b" "$d"',
].join('\n');

/** Whether the leader's and the child's heartbeats advanced within 0.3 s of the sandbox's clock. */
async function beating(ctx: CaseContext, dir: string): Promise<{ leader: boolean; child: boolean }> {
  const result = await ctx.exec(['sh', '-c', BEATING_PROBE, 'sh', dir]);
  const match = /^([0-9]*) ([0-9]*) ([0-9]*) ([0-9]*)\|$/.exec(result.stdoutText);
  if (match === null) throw new ConformanceFailure(`run() lost output of the helper that reads the heartbeats: it printed ${JSON.stringify(result.stdoutText)}`);
  return { leader: match[1] !== match[2], child: match[3] !== match[4] };
}

/**
 * Checks that the `name` command (USR1_SCRIPT) and its child recorded no
 * signal but the kit's own. An absence proves something only if the records
 * can be seen: the kit sends SIGUSR2 itself, and each record must come to
 * hold exactly `count` lines of usr2 (this call's included), no SIGUSR1 from
 * another Process's kill().
 */
async function expectOnlyOwnSignals(ctx: CaseContext, proc: Process, dir: string, name: string, count: number, what: string): Promise<void> {
  await proc.kill('SIGUSR2');
  const within = await bound(ctx, 5_000);
  const expected = Array.from({ length: count }, () => 'usr2').join(',');
  for (const file of [name, `${name}-child`]) {
    const record = await ctx
      .poll(async () => {
        const text = await readMarker(ctx, `${dir}/${file}`);
        return text !== undefined && text.split('\n').filter((line) => line === 'usr2').length >= count ? text : undefined;
      }, within, `kill('SIGUSR2') never reached ${file}`)
      .catch(async (error: unknown) => {
        const result = await proc.wait().catch(() => undefined);
        if (proc.exited) throw new ConformanceFailure(`${what}: the ${name} command ended (${result?.exitCode}/${result?.signal})`);
        throw error;
      });
    const lines = record.split('\n').filter((line) => line !== '');
    if (lines.join(',') !== expected) throw new ConformanceFailure(`${what}: ${file} received ${lines.join(', ')}; only ${expected} was sent to it`);
  }
}

/** The Process handle's kill(): SS-KILL-1. */
export const processCases = [
  defineCase({
    id: 'process.kill',
    title: '"MUST deliver the signal (SIGTERM when none is given) to the command\'s process tree and to no other command": it reaches the command\'s child and not a neighbour, is a no-op after exit, and refuses unknown signals',
    requirements: ['SS-KILL-1', 'SS-CONC-1'],
    needs: ['streaming'],
    async run(ctx) {
      const dir = await scratch(ctx);
      await using target = ctx.sandbox.stream(['sh', '-c', USR1_SCRIPT, 'sh', dir, 'target']);
      await using neighbour = ctx.sandbox.stream(['sh', '-c', USR1_SCRIPT, 'sh', dir, 'neighbour']);
      await untilReady(target[Symbol.asyncIterator](), { ctx, marker: `${dir}/target-printed` });
      await untilReady(neighbour[Symbol.asyncIterator](), { ctx, marker: `${dir}/neighbour-printed` });
      const within = await bound(ctx, 5_000);
      await target.kill('SIGUSR1');
      await ctx.poll(async () => readMarker(ctx, `${dir}/target`), within, 'kill(\'SIGUSR1\') never reached the command');
      await ctx.poll(async () => readMarker(ctx, `${dir}/target-child`), within, 'kill(\'SIGUSR1\') reached the command but not the child it started');
      check(!target.exited, 'a handled SIGUSR1 ended the command');
      await expectOnlyOwnSignals(ctx, neighbour, dir, 'neighbour', 1, 'kill() on one Process signalled another');
      checkErrorCode(await rejectionOf(target.kill('SIGBOGUS' as never), 'kill(\'SIGBOGUS\')'), 'INVALID_ARGUMENT', 'kill() with an unknown signal');
      await target.kill();
      const result = await target.wait();
      check(result.signal === 'SIGTERM', `kill() without a signal should end the command by SIGTERM (got ${result.exitCode}/${result.signal})`);
      check(!neighbour.exited, 'killing one Process ended another');
      // After exit, kill() must reach nothing: not the exited command's pids, not another command.
      await target.kill('SIGUSR1');
      await target.kill('SIGKILL');
      await expectOnlyOwnSignals(ctx, neighbour, dir, 'neighbour', 2, 'kill() on one Process signalled another (after its exit)');
    },
  }),
  defineCase({
    id: 'process.kill-stop-cont',
    title: '"MUST deliver the signal (SIGTERM when none is given) to the command\'s process tree": kill(\'SIGSTOP\') stops the whole tree and kill(\'SIGCONT\') resumes it',
    requirements: ['SS-KILL-1'],
    needs: ['streaming'],
    async run(ctx) {
      const dir = await scratch(ctx);
      await using proc = ctx.sandbox.stream(['sh', '-c', BEATING_SCRIPT, 'sh', dir]);
      await untilReady(proc[Symbol.asyncIterator](), { ctx, marker: `${dir}/printed` });
      const beats = (): Promise<{ leader: boolean; child: boolean }> => beating(ctx, dir);
      const before = await beats();
      if (!before.leader || !before.child) throw new HarnessError('the command\'s heartbeats are not beating before any signal; nothing can be concluded');
      await proc.kill('SIGSTOP');
      // Delivery is not awaited by kill(): allow a few round trips for the stop to land.
      const within = await bound(ctx, 1_000);
      const deadline = performance.now() + within;
      let stopped = await beats();
      while ((stopped.leader || stopped.child) && performance.now() < deadline) stopped = await beats();
      check(!stopped.leader, 'kill(\'SIGSTOP\') resolved but the command kept running (its heartbeat still beats)');
      check(!stopped.child, 'kill(\'SIGSTOP\') stopped the command but not the child it started');
      check(!proc.exited, 'SIGSTOP ended the command');
      await proc.kill('SIGCONT');
      let resumed = await beats();
      const until = performance.now() + within;
      while ((!resumed.leader || !resumed.child) && performance.now() < until) resumed = await beats();
      check(resumed.leader, 'kill(\'SIGCONT\') resolved but the stopped command did not resume');
      check(resumed.child, 'kill(\'SIGCONT\') resumed the command but not the child it started');
    },
  }),
];
