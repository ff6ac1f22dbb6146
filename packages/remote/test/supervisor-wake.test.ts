// The supervisor's waker (ADR-0033, "The end seen by an event"): the command's end wakes the
// supervisor at once; the polls stay the fallback, at their old pace once the waker has called.
import { afterEach, describe, expect, it } from 'vitest';
import { procState } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { CLOCK_TICKS, TESTED_SHELLS, Supervised, missing, uptime, type Shell } from './harness.js';

const started: Supervised[] = [];

afterEach(() => {
  for (const s of started.splice(0)) s.cleanup();
});

function run(shell: Shell, argv: readonly string[]): Supervised {
  const s = new Supervised(shell, argv);
  started.push(s);
  return s;
}

/** The descriptor the command keeps the write end of the waker's pipe on (supervisor.ts). */
const WAKE_FD = 7;

describe.each(TESTED_SHELLS)('the waker under $name', (shell) => {
  const it_ = unless(it, missing(shell));

  it_('reports the end of a command while the poll that would see it still sleeps', async () => {
    const s = run(shell, ['/bin/sh', '-c', 'read -r x; exit 7']);
    await s.report('start');
    // A nap of half a second (the backoff at its cap) caught within a fifth of it, with the
    // supervisor asleep in its wait (not in the instant between the fork and the wait, where a
    // call waits for the next look): no poll looks again before the nap ends, so only the waker
    // can bring the report sooner.
    const nap = await s.nap((n) => n.seconds >= 0.5 && uptime() - n.start < n.seconds / 5 && procState(s.pid) === 'S');
    s.child.stdin!.end('go\n');
    await s.report('exit');
    const slept = uptime() - nap.start;
    expect(s.reports.find((r) => r.type === 'exit')).toEqual({ type: 'exit', status: { kind: 'code', code: 7 } });
    // Both clocks count in ticks: two of them are the whole error of the difference.
    expect(slept).toBeLessThan(nap.seconds - 2 / CLOCK_TICKS);
    await s.report('gone');
  });

  it_('gives the command one descriptor beyond its standard streams: the write end of a pipe, as fd 7', async () => {
    const s = run(shell, ['/bin/sh', '-c', 'for f in 3 4 5 6 7 8 9; do [ -e /proc/$$/fd/$f ] && echo "$f $(readlink /proc/$$/fd/$f)"; done; grep ^flags /proc/$$/fdinfo/7']);
    await s.report('gone');
    const [fd, flags] = s.stdout().toString().trim().split('\n');
    expect(fd).toMatch(new RegExp(`^${WAKE_FD} pipe:\\[\\d+\\]$`));
    // The access mode is the last octal digit of the flags: 1 is write only.
    expect(flags).toMatch(/^flags:\s+[0-7]*1$/);
  });

  it_('sees the end of a command that closed the descriptor by its polls, which then stay at 100 ms at most', async () => {
    const s = run(shell, ['/bin/sh', '-c', `exec ${WAKE_FD}>&-; read -r x; exit 5`]);
    await s.report('start');
    // Three naps at 100 ms: the backoff is at the cap it has without the waker, whose call (the
    // end-of-file of the closed descriptor) was spent at once; one longer nap is the failure.
    const lengths = new Map<number, number>();
    await s.nap((n) => {
      lengths.set(n.pid, n.seconds);
      return n.seconds > 0.1 || [...lengths.values()].filter((seconds) => seconds === 0.1).length >= 3;
    });
    expect(Math.max(...lengths.values())).toBe(0.1);
    s.child.stdin!.end('go\n');
    await s.report('gone');
    expect(s.reports.slice(1)).toEqual([{ type: 'exit', status: { kind: 'code', code: 5 } }, { type: 'gone' }]);
  });

  it_('sees the end of a command whose child keeps the descriptor by its polls, and gone once the child ended', async () => {
    const s = run(shell, ['/bin/sh', '-c', 'read -r x; sleep 60 & echo $!']);
    s.child.stdin!.end('go\n');
    const [child] = (await s.lines(1)).map(Number);
    await s.report('held');
    expect(s.reports.map((r) => r.type)).toEqual(['start', 'exit', 'held']);
    process.kill(child as number, 'SIGKILL');
    await s.report('gone');
    expect(await s.ended).toEqual({ code: 0, signal: null });
  });
});
