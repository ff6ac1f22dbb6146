// The plain mode's terminals (spec 1.5, ADR-0052, ADR-0053): the command leads a session on a new
// pseudo-terminal, every byte of the master arrives as stdout, input is typed, resize reaches the
// foreground group, teardown ends the whole session, and the status is the command's own.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CapabilityNotSupported, type OutputChunk, type Process } from '@sandstream/types';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { waitFor, within } from '@sandstream/test-support/timing';
import { readProcStat } from '@sandstream/types/runtime';
import { GUARDIAN_ARGS, GUARDIAN_ENV } from '../src/guardian.js';
import { GRACE_MS, TEARDOWN_BOUND_MS, fdCount, isAlive, markedProcesses, testSandbox, text } from './helpers.js';

const SIZE = { cols: 100, rows: 30 } as const;
/** An empty HOME for shells that read their profile: a user's (a pyenv lock) can hang a login shell. */
const home = mkdtempSync(join(tmpdir(), 'sandstream-terminal-home-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

// The library's open() terminal has pid -1, and its destroy() and kill() call process.kill(-1):
// every process this one may signal. A signal to a pid below 1 from anywhere in this process
// fails the test that made it, instead of being sent.
const realKill = process.kill.bind(process);
const forbidden: string[] = [];
beforeAll(() => {
  process.kill = ((pid: number, signal?: string | number) => {
    if (!(pid >= 1)) {
      forbidden.push(`process.kill(${pid}, ${String(signal)})`);
      throw Object.assign(new Error(`process.kill(${pid}) refused by the test`), { code: 'EPERM' });
    }
    return realKill(pid, signal);
  }) as typeof process.kill;
});
afterEach(() => {
  const calls = forbidden.splice(0);
  expect(calls, 'process.kill with a pid below 1').toEqual([]);
});
afterAll(() => {
  process.kill = realKill;
});

/** Reads chunks until the text seen satisfies `until`; returns it. */
async function readUntil(iterator: AsyncIterator<OutputChunk, undefined>, until: (seen: string) => boolean): Promise<string> {
  let seen = '';
  while (!until(seen)) {
    const next = await iterator.next();
    if (next.done) throw new Error(`output ended before the expected text; got ${JSON.stringify(seen)}`);
    expect(next.value.stream).toBe('stdout');
    seen += text(next.value.data);
  }
  return seen;
}

/** Every chunk to the end, as one string; asserts nothing came on stderr. */
async function readAll(proc: Process): Promise<string> {
  let seen = '';
  for await (const chunk of proc) {
    expect(chunk.stream).toBe('stdout');
    seen += text(chunk.data);
  }
  return seen;
}

/** Pids of the processes of session `sid` that are alive. */
function sessionMembers(sid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStatFields(Number(entry));
    if (stat !== undefined && stat[3] === String(sid) && stat[0] !== 'Z') found.push(Number(entry));
  }
  return found;
}

function procStatFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

describe('plain mode: terminals', () => {
  it('declares pty where the library loads', () => {
    const sb = testSandbox();
    expect(sb.capabilities.pty).toBe(true);
    expect(sb.native.ptyUnavailable).toBeUndefined();
  });

  it('turned off by the capabilities option, the option throws CapabilityNotSupported', () => {
    const sb = testSandbox({ capabilities: { pty: false } });
    expect(sb.capabilities.pty).toBe(false);
    expect(() => sb.stream(['true'], { pty: SIZE })).toThrow(expect.objectContaining({ capability: 'pty' }));
  });

  it('the command leads its session on a controlling terminal of the given size', async () => {
    const sb = testSandbox();
    const result = await sb.run(['sh', '-c', 'tty; stty size; ps -o sid=,pgid=,tpgid= -p $$; echo "pid $$"; echo "TERM $TERM"'], { pty: SIZE });
    expect(result).toMatchObject({ exitCode: 0, signal: null, stderr: new Uint8Array() });
    const out = result.stdoutText;
    expect(out).toMatch(/^\/dev\/pts\/\d+\r\n/);
    expect(out).toContain('30 100\r\n');
    const pid = /pid (\d+)/.exec(out)![1]!;
    const ids = /^\s*(\d+)\s+(\d+)\s+(\d+)\r$/m.exec(out);
    expect(ids?.slice(1)).toEqual([pid, pid, pid]);
    expect(out).toContain('TERM xterm-256color\r\n');
  });

  it('resize reaches a trap on WINCH', async () => {
    const sb = testSandbox();
    const proc = sb.stream(['sh', '-c', 'trap "stty size" WINCH; echo ready; while :; do sleep 0.05; done'], { pty: SIZE, stdin: 'pipe' });
    const iterator = proc[Symbol.asyncIterator]();
    await readUntil(iterator, (seen) => seen.includes('ready\r\n'));
    await proc.resize!(120, 40);
    await readUntil(iterator, (seen) => seen.includes('40 120\r\n'));
    await proc[Symbol.asyncDispose]();
  });

  it('0x03 interrupts cat, whose result is SIGINT', async () => {
    const sb = testSandbox();
    const proc = sb.stream(['sh', '-c', 'echo ready; exec cat'], { pty: SIZE, stdin: 'pipe' });
    const iterator = proc[Symbol.asyncIterator]();
    await readUntil(iterator, (seen) => seen.includes('ready\r\n'));
    // The exec may not have happened yet when "ready" arrives; cat echoes what it reads.
    await proc.stdin!.write('x\n');
    await readUntil(iterator, (seen) => seen.includes('x\r\nx\r\n'));
    await proc.stdin!.write(new Uint8Array([0x03]));
    const result = await proc.wait();
    expect(result).toMatchObject({ exitCode: null, signal: 'SIGINT' });
  });

  it('abc then end() makes cat print abc and exit 0', async () => {
    const sb = testSandbox();
    const proc = sb.stream(['cat'], { pty: SIZE, stdin: 'pipe' });
    await proc.stdin!.write('abc');
    await proc.stdin!.end();
    const out = await readAll(proc);
    const result = await proc.wait();
    expect(result).toMatchObject({ exitCode: 0, signal: null });
    // The echo of the typed line, then cat's copy of it.
    expect(out).toBe('abcabc');
  });

  it('one-shot input is typed and followed by end-of-file', async () => {
    const sb = testSandbox();
    const result = await sb.run(['cat'], { pty: SIZE, input: 'hello\n' });
    expect(result).toMatchObject({ exitCode: 0, signal: null });
    expect(result.stdoutText).toBe('hello\r\nhello\r\n');
  });

  it('a command that reads its terminal without a writer sees end-of-file', async () => {
    const sb = testSandbox();
    const result = await sb.run(['cat'], { pty: SIZE, timeout: 10_000 });
    expect(result).toMatchObject({ exitCode: 0, signal: null, timedOut: false });
  });

  it('exit 130 is an exit code; kill -INT $$ is a signal', async () => {
    const sb = testSandbox();
    expect(await sb.run(['sh', '-c', 'exit 130'], { pty: SIZE })).toMatchObject({ exitCode: 130, signal: null });
    expect(await sb.run(['sh', '-c', 'kill -INT $$'], { pty: SIZE })).toMatchObject({ exitCode: null, signal: 'SIGINT' });
  });

  it('a missing program is SpawnFailed, not an exit status of setsid', async () => {
    const sb = testSandbox();
    await expect(sb.run(['sandstream-no-such-program'], { pty: SIZE })).rejects.toMatchObject({ name: 'SpawnFailed' });
  });

  it('2 MB then a marker, twenty times: nothing lost', async () => {
    const sb = testSandbox();
    for (let round = 0; round < 20; round++) {
      const result = await sb.run(['sh', '-c', 'head -c 2000000 /dev/zero; printf END'], { pty: SIZE });
      expect(result).toMatchObject({ exitCode: 0, signal: null });
      expect(result.stdout.byteLength).toBe(2_000_003);
      expect(result.stdoutText.endsWith('END')).toBe(true);
    }
  }, 120_000);

  it("a job's output after the leader's exit is delivered", async () => {
    // The job (its dispositions set before the fork, so that no signal can come first) ignores the SIGHUP the kernel sends the foreground group when the leader exits, and
    // the SIGHUP and SIGTERM with which the runtime then winds the session down: it writes within
    // the grace period, and is killed only after it.
    const sb = testSandbox({ graceMs: 5_000 });
    const result = await sb.run(['sh', '-c', 'trap "" HUP TERM; (sleep 0.3; printf after) & printf before'], { pty: SIZE });
    expect(result).toMatchObject({ exitCode: 0, signal: null });
    expect(result.stdoutText).toBe('beforeafter');
  });

  it('a command ignoring SIGHUP and SIGTERM is gone after disposal within the grace period and the kill wait', async () => {
    const sb = testSandbox();
    const proc = sb.stream(['sh', '-c', "trap '' HUP TERM; echo $$; while :; do sleep 0.05; done"], { pty: SIZE, stdin: 'pipe' });
    const iterator = proc[Symbol.asyncIterator]();
    const pid = Number((await readUntil(iterator, (seen) => seen.includes('\r\n'))).trim());
    expect(isAlive(pid)).toBe(true);
    const started = performance.now();
    await proc[Symbol.asyncDispose]();
    expect(performance.now() - started).toBeLessThan(TEARDOWN_BOUND_MS + GRACE_MS);
    expect(isAlive(pid)).toBe(false);
    expect(sessionMembers(pid)).toEqual([]);
  });

  it('a job of an interactive shell (its own group in the session) is gone after disposal', async () => {
    const sb = testSandbox();
    const proc = sb.stream(['bash', '--norc', '--noprofile', '-i'], { pty: SIZE, stdin: 'pipe', env: { HOME: home, PS1: '$ ' } });
    const iterator = proc[Symbol.asyncIterator]();
    await proc.stdin!.write('sleep 300 & echo "job $!"; echo "shell $$"\n');
    const seen = await readUntil(iterator, (s) => /shell \d+\r\n/.test(s));
    const job = Number(/job (\d+)\r\n/.exec(seen)![1]);
    const shell = Number(/shell (\d+)\r\n/.exec(seen)![1]);
    // The job leads its own group in the shell's session.
    expect(procStatFields(job)?.[2]).toBe(String(job));
    expect(procStatFields(job)?.[3]).toBe(String(shell));
    await proc[Symbol.asyncDispose]();
    expect(isAlive(job)).toBe(false);
    expect(isAlive(shell)).toBe(false);
  });

  it('leaves no descriptor behind after many terminals', async () => {
    const sb = testSandbox();
    await sb.run(['true'], { pty: SIZE });
    const before = fdCount();
    for (let round = 0; round < 100; round++) {
      const result = await sb.run(['true'], { pty: SIZE });
      expect(result.exitCode).toBe(0);
    }
    expect(fdCount()).toBeLessThanOrEqual(before);
  }, 60_000);

  it('the command inherits no master: only its terminal on 0-2', async () => {
    const sb = testSandbox();
    const result = await sb.run(['sh', '-c', 'ls -l /proc/$$/fd | grep -c ptmx || true'], { pty: SIZE });
    expect(result.stdoutText.trim()).toBe('0');
  });

  it('without the library, no pty, and the option throws CapabilityNotSupported before spawning', async () => {
    const sb = testSandbox({ ptyModule: {} as never });
    expect(sb.capabilities.pty).toBeUndefined();
    expect(sb.native.ptyUnavailable).toMatch(/open/);
    const before = markedProcesses().length;
    expect(() => sb.stream(['sh', '-c', 'sleep 5'], { pty: SIZE })).toThrow(CapabilityNotSupported);
    await expect(sb.run(['true'], { pty: SIZE })).rejects.toBeInstanceOf(CapabilityNotSupported);
    expect(markedProcesses().length).toBe(before);
  });
});

/** The shells the guardian's script must run under. */
const SHELLS: readonly (readonly [string, readonly string[]])[] = [
  ['dash', ['/bin/dash']],
  ['bash', ['/bin/bash']],
  ['busybox ash', ['/bin/busybox', 'ash']],
];

describe("the guardian's script and a terminal's session", () => {
  for (const [name, shell] of SHELLS) {
    unless(it, existsSync(shell[0]!) ? undefined : `${shell[0]} is not installed`)(
      `under ${name}: at end-of-file ends every group of a registered session, SIGHUP first, SIGKILL after the grace period`,
      async () => {
        // A terminal's session whose leader ignores SIGHUP and SIGTERM, and whose job (set -m,
        // which takes a terminal) leads a group of its own in it, as a job of an interactive shell
        // does. The sandbox's own guardian acts only should this process die; a long grace period
        // keeps its runtime out of the way while a second guardian, told the session, ends it.
        const sb = testSandbox({ graceMs: 60_000 });
        const proc = sb.stream(['sh', '-c', "set -m; sleep 300 & trap '' HUP TERM; echo $!; exec sleep 301"], { pty: SIZE, stdin: 'pipe' });
        const iterator = proc[Symbol.asyncIterator]();
        const job = Number((await readUntil(iterator, (seen) => seen.includes('\r\n'))).trim());
        const leaderPid = proc.pid!;
        await waitFor(() => readFileSync(`/proc/${leaderPid}/comm`, 'latin1').trim() === 'sleep', 5_000, 'the leader ignoring SIGHUP and SIGTERM');
        expect(readProcStat(job)?.pgrp).toBe(job);
        expect(readProcStat(job)?.session).toBe(leaderPid);
        const leader = { pid: leaderPid };
        const guardian = spawn(shell[0]!, [...shell.slice(1), ...GUARDIAN_ARGS], { stdio: ['pipe', 'ignore', 'pipe'], detached: true, cwd: '/', env: GUARDIAN_ENV });
        onTestFinished(() => void guardian.kill('SIGKILL'));
        let stderr = '';
        guardian.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
        const exited = new Promise((resolve) => guardian.once('close', resolve));
        guardian.stdin!.write(`+s${leader.pid} ${readProcStat(leader.pid)!.startTicks} 300\n+s1 1 1\n-s\n`);
        const endedAt = Date.now();
        guardian.stdin!.end();
        await waitFor(() => !isAlive(job), 5_000, 'the job, ended by SIGHUP');
        expect(await within(10_000, exited, 'the guardian')).toBe(0);
        const elapsed = Date.now() - endedAt;
        expect(stderr).toBe('');
        await waitFor(() => !isAlive(leader.pid), 5_000, 'the leader, ended by SIGKILL');
        expect(elapsed, 'SIGKILL came before the grace period was over').toBeGreaterThanOrEqual(300 - 20);
        expect(await proc.wait()).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
      },
    );
  }
});
