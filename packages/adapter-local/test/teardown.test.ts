import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { AbortError, CallbackFailed, SandboxClosed } from '@sandstream/types';
import { killEach } from '@sandstream/test-support/processes';
import { waitFor } from '@sandstream/test-support/timing';
import {
  eventually,
  firstLinePid,
  isAlive,
  markedProcesses,
  nodeScript,
  procStat,
  readUntil,
  TEARDOWN_BOUND_MS,
  COMMAND_BOUND_MS,
  testSandbox,
  within,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sandstream-teardown-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Prints the shell's pid and the background child's pid, then keeps the pipe busy. */
const TREE_YES = ['sh', '-c', 'sleep 1000 & echo "$$ $!"; exec yes'];
/** Prints the pids, then sleeps: a quiet tree. */
const TREE_QUIET = ['sh', '-c', 'sleep 1000 & echo "$$ $!"; exec sleep 1000'];

/** A node child that reports TERM on stdout before exiting with 7. */
const TERM_HANDLER = nodeScript(`
  process.on('SIGTERM', () => { process.stdout.write('got SIGTERM\\n', () => process.exit(7)); });
  process.stdout.write(process.pid + ' ready\\n');
  setInterval(() => {}, 1000);
`);

/** Ignores SIGTERM (the disposition survives exec). */
const IGNORES_TERM = ['sh', '-c', 'trap "" TERM; echo $$; exec sleep 1000'];

async function pidsFrom(iterator: AsyncIterator<import('@sandstream/types').OutputChunk, undefined>): Promise<number[]> {
  const seen = await readUntil(iterator, (s) => s.includes('\n'));
  return seen.split('\n')[0]!.trim().split(' ').map(Number);
}

function expectAllDead(pids: number[]): void {
  for (const pid of pids) expect(isAlive(pid), `pid ${pid} is still alive`).toBe(false);
}

describe('process groups', () => {
  it('runs each command as the leader of its own process group', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'echo $$; exec sleep 1000']);
    const { pid } = await firstLinePid(proc);
    expect(proc.pid).toBe(pid);
    const stat = procStat(pid)!;
    expect(Number(stat[2])).toBe(pid); // pgrp
    expect(Number(stat[3])).toBe(pid); // session: detached from ours
    expect(Number(stat[2])).not.toBe(Number(procStat(process.pid)![2]));
  });

  it('gives concurrent commands separate groups and separate output', async () => {
    const sb = testSandbox();
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) => sb.run(['sh', '-c', `echo $$; echo out${n}; echo err${n} >&2; exit ${n}`])),
    );
    const pids = new Set<string>();
    results.forEach((result, index) => {
      const n = index + 1;
      const [pid, out] = result.stdoutText.split('\n');
      pids.add(pid!);
      expect(out).toBe(`out${n}`);
      expect(result.stderrText).toBe(`err${n}\n`);
      expect(result.exitCode).toBe(n);
    });
    expect(pids.size).toBe(4);
  });
});

describe('termination', () => {
  it('sends SIGTERM first, so a handler gets to run', async () => {
    const sb = testSandbox({ graceMs: 5_000 });
    const controller = new AbortController();
    const error = await sb
      .run(TERM_HANDLER, {
        signal: controller.signal,
        onOutput: (chunk) => {
          if (new TextDecoder().decode(chunk.data).includes('ready')) controller.abort();
        },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortError);
    const result = (error as AbortError).result!;
    expect(result.stdoutText).toContain('got SIGTERM');
    expect(result.exitCode).toBe(7);
    expect(result.signal).toBeNull();
  });

  it('lets a SIGTERM handler finish cleaning up within the grace period', async () => {
    const sb = testSandbox({ graceMs: 10_000 });
    await using proc = sb.stream(
      nodeScript(`
        process.on('SIGTERM', () => setTimeout(() => { process.stdout.write('cleaned\\n'); process.exit(0); }, 300));
        process.stdout.write('ready\\n');
        setInterval(() => {}, 1000);
      `),
    );
    const iterator = proc[Symbol.asyncIterator]();
    await readUntil(iterator, (s) => s.includes('ready'));
    await proc.kill('SIGTERM');
    const rest = await readUntil(iterator, (s) => s.includes('cleaned'));
    expect(rest).toContain('cleaned');
    const result = await proc.wait();
    expect(result.exitCode).toBe(0);
    expect(result.signal).toBeNull();
  });

  it('kills a child that ignores SIGTERM once the grace period is over', async () => {
    const sb = testSandbox();
    const proc = sb.stream(IGNORES_TERM);
    const { pid } = await firstLinePid(proc);
    await within(TEARDOWN_BOUND_MS, proc[Symbol.asyncDispose](), 'disposal');
    expect(isAlive(pid)).toBe(false);
    const result = await proc.wait();
    expect(result.signal).toBe('SIGKILL');
    expect(result.exitCode).toBeNull();
    expect(proc.exited).toBe(true);
  });

  it('honours a grace period longer than setTimeout can hold', async () => {
    const sb = testSandbox({ graceMs: 2 ** 32 });
    // The leader exits and leaves a member that survives SIGTERM: it must not be SIGKILLed 1 ms
    // later, as an overflowing timer would. The member records the SIGTERM, then a tick every
    // 50 ms; the leader exits only once the member's trap is set.
    const log = join(dir, 'long-grace.log');
    const member = `trap 'echo term >> "$0"' TERM; echo ready >> "$0"; while :; do sleep 0.05; echo tick >> "$0"; done`;
    await using proc = sb.stream([
      'sh',
      '-c',
      'sh -c "$1" "$0" >/dev/null 2>&1 </dev/null & until grep -q ready "$0" 2>/dev/null; do sleep 0.01; done; echo $!',
      log,
      member,
    ]);
    const { pid } = await firstLinePid(proc);
    // The sequence began (the member got SIGTERM), and the member lived on well past where an
    // overflowing timer's SIGKILL would have ended it (that timer would fire before this look).
    const logged = (): string => (existsSync(log) ? readFileSync(log, 'utf8') : '');
    await waitFor(() => /term\n(tick\n){3}/.test(logged()), COMMAND_BOUND_MS, () => `SIGTERM, then three ticks of the member (its log: ${JSON.stringify(logged())})`);
    expect(isAlive(pid)).toBe(true);
    process.kill(pid, 'SIGKILL');
    expect((await within(TEARDOWN_BOUND_MS, proc.wait(), 'wait()')).exitCode).toBe(0);
  });

  it('resolves disposal only once the leader was reaped', async () => {
    const sb = testSandbox();
    const proc = sb.stream(['sh', '-c', 'echo $$; exec sleep 1000']);
    const { pid } = await firstLinePid(proc);
    await proc[Symbol.asyncDispose]();
    // Reaped, not merely signalled: the pid has no entry at all, zombie or not.
    expect(procStat(pid)).toBeUndefined();
    expect(proc.exited).toBe(true);
  });

  it('kill() delivers other signals to the group and is a no-op once exited', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'trap "echo usr1" USR1; echo ready; while :; do sleep 0.02; done']);
    const iterator = proc[Symbol.asyncIterator]();
    await readUntil(iterator, (s) => s.includes('ready'));
    await proc.kill('SIGUSR1');
    await readUntil(iterator, (s) => s.includes('usr1'));
    await proc.kill('SIGKILL');
    const result = await proc.wait();
    expect(result.signal).toBe('SIGKILL');
    await expect(proc.kill('SIGTERM')).resolves.toBeUndefined();
    await expect(proc.kill('SIGBOGUS' as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('a group it may not signal (EPERM) never becomes an uncaught exception', async () => {
    const escaped: unknown[] = [];
    const onEscape = (error: unknown): void => {
      escaped.push(error);
    };
    process.on('uncaughtException', onEscape);
    const realKill = process.kill.bind(process);
    // As for a group whose remaining member runs set-uid: group signals fail with EPERM.
    const kill = vi.spyOn(process, 'kill').mockImplementation((pid: number, signal?: string | number) => {
      if (pid < 0 && signal !== 0) throw Object.assign(new Error(`kill ${pid} EPERM`), { code: 'EPERM' });
      return realKill(pid, signal);
    });
    const groupSignals = (): unknown[] => kill.mock.calls.filter(([pid, signal]) => pid < 0 && signal !== 0 && signal !== undefined).map(([, signal]) => signal);
    try {
      const sb = testSandbox();
      // The leader exits and leaves a member, so the group must be wound down: SIGTERM, SIGKILL.
      // (A group already empty when its leader exits is never signalled, and would prove nothing.)
      const outcome = await within(
        COMMAND_BOUND_MS,
        sb.run(['sh', '-c', 'sleep 1000 </dev/null >/dev/null 2>&1 & echo hi; exit 3']),
        'run()',
      ).catch((error: unknown) => error);
      // The failure reaches the caller: run() answers the exit, or rejects naming the EPERM.
      if (outcome instanceof Error) expect(`${outcome.message} ${String(outcome.cause)}`).toMatch(/EPERM/);
      else expect((outcome as { exitCode: number }).exitCode).toBe(3);
      // The termination sequence ran to its end, each signal failing: an exception it let escape
      // would have reached the listener by the time the next look runs.
      await waitFor(() => groupSignals().includes('SIGKILL'), COMMAND_BOUND_MS, () => `the group SIGKILL to be tried (group signals so far: ${JSON.stringify(groupSignals())})`);
      expect(groupSignals()).toContain('SIGTERM');
    } finally {
      kill.mockRestore();
      process.off('uncaughtException', onEscape);
      killEach(markedProcesses());
    }
    expect(escaped).toEqual([]);
  });

  it('a stopped command still terminates on disposal', async () => {
    const sb = testSandbox({ graceMs: 10_000 });
    const proc = sb.stream(['sh', '-c', 'echo $$; exec sleep 1000']);
    const { pid } = await firstLinePid(proc);
    await proc.kill('SIGSTOP');
    expect(await eventually(() => procStat(pid)?.[0] === 'T')).toBe(true);
    // SIGCONT follows SIGTERM, so the stopped command acts on it well
    // before the (long) grace period would escalate to SIGKILL.
    await within(5_000, proc[Symbol.asyncDispose](), 'disposal');
    expect((await proc.wait()).signal).toBe('SIGTERM');
  });
});

describe('background grandchildren die with the group', () => {
  it('when the leader exits by itself, and wait() does not hang on a grandchild holding the pipe', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'sleep 1000 & echo "$$ $!"']);
    const iterator = proc[Symbol.asyncIterator]();
    const pids = await pidsFrom(iterator);
    const result = await within(TEARDOWN_BOUND_MS, proc.wait(), 'wait()');
    expect(result.exitCode).toBe(0);
    expectAllDead(pids);
  });

  it('run() of a command leaving a grandchild on the pipe returns its output', async () => {
    const sb = testSandbox();
    const result = await within(COMMAND_BOUND_MS, sb.run(['sh', '-c', 'sleep 1000 & echo hi']), 'run()');
    expect(result.stdoutText).toBe('hi\n');
    expect(result.exitCode).toBe(0);
  });

  it('when a grandchild ignores SIGTERM and holds no pipe', async () => {
    const sb = testSandbox();
    const result = await within(
      COMMAND_BOUND_MS,
      sb.run(['sh', '-c', 'trap "" TERM; sleep 1000 >/dev/null 2>&1 </dev/null & echo $!']),
      'run()',
    );
    expect(result.exitCode).toBe(0);
    expectAllDead([Number(result.stdoutText.trim())]);
  });

  it('when a grandchild ignores SIGTERM and holds the pipe', async () => {
    const sb = testSandbox();
    const result = await within(COMMAND_BOUND_MS, sb.run(['sh', '-c', 'trap "" TERM; sleep 1000 & echo $!']), 'run()');
    expectAllDead([Number(result.stdoutText.trim())]);
  });

  it('does not hang when a process that left the group holds the pipe', async () => {
    const sb = testSandbox();
    const result = await within(
      COMMAND_BOUND_MS,
      sb.run(['sh', '-c', 'setsid -f sh -c "echo \\$\\$; exec sleep 1000"; sleep 0.3']),
      'run()',
    );
    expect(result.exitCode).toBe(0);
    // It left the group, so the group's teardown cannot reach it: clean up here.
    const escaped = Number(result.stdoutText.trim());
    expect(escaped).toBeGreaterThan(0);
    process.kill(escaped, 'SIGKILL');
    await eventually(() => !isAlive(escaped));
  });

  it.each([
    ['break', 'break'],
    ['throw', 'throw'],
    ['return', 'return'],
  ] as const)('on %s out of for-await, before the loop exits', async (_name, how) => {
    const sb = testSandbox();
    const proc = sb.stream(TREE_YES);
    let pids: number[] = [];
    let seen = '';
    const body = async (): Promise<void> => {
      for await (const chunk of proc) {
        seen += new TextDecoder().decode(chunk.data);
        if (pids.length === 0 && seen.includes('\n')) pids = seen.split('\n')[0]!.split(' ').map(Number);
        if (pids.length > 0 && seen.length > 100_000) {
          if (how === 'break') break;
          if (how === 'throw') throw new Error('stop');
          return;
        }
      }
    };
    if (how === 'throw') await expect(body()).rejects.toThrow('stop');
    else await body();
    expect(proc.exited).toBe(true);
    expectAllDead(pids);
  });

  it('on `await using` scope exit', async () => {
    const sb = testSandbox();
    let pids: number[];
    {
      await using proc = sb.stream(TREE_YES);
      pids = await pidsFrom(proc[Symbol.asyncIterator]());
      expect(isAlive(pids[1]!)).toBe(true);
    }
    expectAllDead(pids);
  });

  it('on `await using` exit by an exception', async () => {
    const sb = testSandbox();
    let pids: number[] = [];
    await expect(
      (async () => {
        await using proc = sb.stream(TREE_YES);
        pids = await pidsFrom(proc[Symbol.asyncIterator]());
        throw new Error('inside the scope');
      })(),
    ).rejects.toThrow('inside the scope');
    expectAllDead(pids);
  });

  it('on timeout', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(TREE_QUIET, { timeout: 1_500 });
    const iterator = proc[Symbol.asyncIterator]();
    const pids = await pidsFrom(iterator);
    const result = await within(1_500 + TEARDOWN_BOUND_MS + 1_000, proc.wait(), 'wait()');
    expect(result.timedOut).toBe(true);
    expectAllDead(pids);
  });

  it('on abort', async () => {
    const sb = testSandbox();
    const controller = new AbortController();
    await using proc = sb.stream(TREE_YES, { signal: controller.signal });
    const pids = await pidsFrom(proc[Symbol.asyncIterator]());
    controller.abort();
    await expect(proc.wait()).rejects.toBeInstanceOf(AbortError);
    expectAllDead(pids);
  });

  it('on a throwing onOutput callback', async () => {
    const sb = testSandbox();
    let pids: number[] = [];
    let seen = '';
    const error = await sb
      .run(TREE_YES, {
        onOutput: (chunk) => {
          seen += new TextDecoder().decode(chunk.data);
          if (seen.includes('\n')) {
            pids = seen.split('\n')[0]!.split(' ').map(Number);
            throw new Error('callback failed');
          }
        },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallbackFailed);
    expect(pids).toHaveLength(2);
    expectAllDead(pids);
  });

  it('on run() timeout with output still flowing', async () => {
    const sb = testSandbox();
    const result = await sb.run(['sh', '-c', 'sleep 1000 & exec yes'], { timeout: 1_000, maxOutputBytes: 1024 });
    expect(result.timedOut).toBe(true);
    expect(result.stdoutTruncated).toBe(true);
    expect(markedProcesses()).toEqual([]);
  });
});

describe('Sandbox.close()', () => {
  it('terminates every process it started, iterated or not, and then refuses new work', async () => {
    const sb = testSandbox();
    const iterated = sb.stream(TREE_YES);
    const pidsIterated = await pidsFrom(iterated[Symbol.asyncIterator]());
    const neverIterated = sb.stream(TREE_QUIET);
    const running = sb.run(['sh', '-c', 'echo started; exec sleep 1000']);
    const ignoring = sb.stream(IGNORES_TERM);
    const ignoringPid = (await firstLinePid(ignoring)).pid;
    // Wait until the never-iterated one runs, without iterating it.
    await eventually(() => neverIterated.pid !== undefined, 5_000);
    expect(neverIterated.pid).toBeDefined();

    await within(TEARDOWN_BOUND_MS, sb.close(), 'close()');

    expect(iterated.exited && neverIterated.exited && ignoring.exited).toBe(true);
    expectAllDead([...pidsIterated, ignoringPid, neverIterated.pid!]);
    const runResult = await running;
    expect(runResult.signal).toBe('SIGTERM');
    expect(markedProcesses()).toEqual([]);

    expect(() => sb.stream(['true'])).toThrow(SandboxClosed);
    await expect(sb.run(['true'])).rejects.toBeInstanceOf(SandboxClosed);
    await expect(sb.close()).resolves.toBeUndefined();
    await expect(sb[Symbol.asyncDispose]()).resolves.toBeUndefined();
  });

  it('finishes teardown even when the caller aborted long before', async () => {
    const sb = testSandbox();
    const controller = new AbortController();
    const proc = sb.stream(IGNORES_TERM, { signal: controller.signal });
    const { pid } = await firstLinePid(proc);
    controller.abort();
    await within(TEARDOWN_BOUND_MS, proc[Symbol.asyncDispose](), 'disposal');
    expect(isAlive(pid)).toBe(false);
    await expect(proc.wait()).rejects.toBeInstanceOf(AbortError);
  });
});
