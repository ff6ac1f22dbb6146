/**
 * The emulator driven by the real @vercel/sandbox SDK alone: its faithfulness
 * is checked against the SDK's own expectations (its zod schemas, its
 * content-type checks, its retries).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APIError, Sandbox } from '@vercel/sandbox';
import { killEach } from '@sandstream/test-support/processes';
import { VercelEmulator } from '../src/emulator/index.js';
import { until } from './helpers.js';

let emulator: VercelEmulator;
let sandbox: Sandbox;

beforeAll(async () => {
  emulator = await VercelEmulator.start({ stdin: true });
  sandbox = await Sandbox.create({ ...emulator.credentials, fetch: emulator.fetch });
});

afterAll(async () => {
  await emulator.close();
});

function liveOf(cmdId: string): number[] {
  return emulator.processes().filter((p) => p.cmdId === cmdId).map((p) => p.pid);
}

describe('the emulator under the real SDK', () => {
  it('runs an attached command: output and exit code', async () => {
    const done = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'echo out; echo err >&2; exit 3'] });
    expect(done.exitCode).toBe(3);
    expect(await done.stdout()).toBe('out\n');
    expect(await done.stderr()).toBe('err\n');
    const start = emulator.requests.find((r) => r.method === 'POST' && r.path.endsWith('/cmd'));
    expect(start?.body).toMatchObject({ command: 'sh', wait: true });
    // Recorded with its route and timing: the attached stream's end is its answer's end.
    expect(start).toMatchObject({ route: 'start-command', status: 200 });
    expect(start!.endedAt).toBeGreaterThanOrEqual(start!.at);
    expect(emulator.requestCounts()['start-command']).toBeGreaterThanOrEqual(1);
  });

  it('an attached start carries log records only when it asks for them (logs: true), as the SDK does', async () => {
    const path = `/v2/sandboxes/sessions/${sandbox.currentSession().sessionId}/cmd`;
    const records = async (extra: Record<string, unknown>): Promise<unknown[]> => {
      const answer = await emulator.fetch(`https://vercel.com/api${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${emulator.credentials.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: 'echo', args: ['hi'], wait: true, ...extra }),
      });
      expect(answer.headers.get('content-type')).toBe('application/x-ndjson');
      return (await answer.text()).trim().split('\n').map((line) => JSON.parse(line) as unknown);
    };
    const without = await records({});
    expect(without).toHaveLength(2);
    expect(without.every((r) => typeof r === 'object' && r !== null && 'command' in r)).toBe(true);
    expect(await records({ logs: true })).toContainEqual({ stream: 'stdout', data: 'hi\n' });
  });

  it('finds a command\'s tree by its SANDSTREAM_COMMAND tag, a member that left the group included', async () => {
    const id = `tag-${Date.now()}`;
    const command = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'setsid sleep 30 & wait'], env: { SANDSTREAM_COMMAND: id }, detached: true });
    // Two processes are tagged as soon as the shell forked; the child leaves the group only once
    // it has run setsid (seen in CI): wait for the two groups, not the two processes.
    const groups = (): number => new Set(emulator.tagged(id).map((p) => p.pgrp)).size;
    await until(() => emulator.tagged(id).length === 2 && groups() === 2, 10_000, 'the leader and its escaped child, tagged, in two groups');
    killEach(emulator.tagged(id));
    await command.wait();
    await until(() => emulator.tagged(id).length === 0, 10_000, 'the tree gone');
  });

  it('runs a detached command: logs replayed from the start, then followed live, then wait()', async () => {
    const command = await sandbox.runCommand({
      cmd: 'sh',
      args: ['-c', 'echo one; read line; echo "got $line"; echo two >&2'],
      detached: true,
    });
    expect(command.cmdId).toMatch(/^cmd_/);
    const seen: string[] = [];
    const logs = command.logs();
    // The first record arrives while the command waits on its standard input.
    for await (const log of logs) {
      seen.push(`${log.stream}:${log.data}`);
      break;
    }
    logs.close();
    expect(seen).toEqual(['stdout:one\n']);
    // Standard input through the emulator's endpoint, then the rest live.
    const stdinPath = `/v2/sandboxes/sessions/${sandbox.currentSession().sessionId}/cmd/${command.cmdId}/stdin`;
    const answer = await emulator.fetch(`https://vercel.com/api${stdinPath}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${emulator.credentials.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ offset: 0, data: Buffer.from('hello\n').toString('base64') }),
    });
    expect(await answer.json()).toMatchObject({ offset: 6 });
    const all: string[] = [];
    for await (const log of command.logs()) all.push(`${log.stream}:${log.data}`);
    expect(all).toEqual(['stdout:one\n', 'stdout:got hello\n', 'stderr:two\n']);
    const finished = await command.wait();
    expect(finished.exitCode).toBe(0);
    const logsRequest = emulator.requests.find((r) => r.path.endsWith(`${command.cmdId}/logs`));
    expect(logsRequest?.status).toBe(200);
  });

  it('kill() signals the command itself, not what it started', async () => {
    const command = await sandbox.runCommand({
      cmd: 'sh',
      args: ['-c', 'sleep 30 & echo started; wait'],
      detached: true,
    });
    for await (const log of command.logs()) if (log.data.includes('started')) break;
    expect(liveOf(command.cmdId).length).toBe(2);
    await command.kill('SIGKILL');
    const finished = await command.wait();
    expect(finished.exitCode).toBe(128 + 9);
    // The leader is gone; its child lives on, as the service's kill leaves it.
    const left = liveOf(command.cmdId);
    expect(left.length).toBe(1);
    for (const pid of left) process.kill(pid, 'SIGKILL');
  });

  it('enforces the command timeout', async () => {
    const started = Date.now();
    const done = await sandbox.runCommand({ cmd: 'sleep', args: ['30'], timeoutMs: 200 });
    expect(done.exitCode).toBe(137);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('decodes output with a streaming UTF-8 decoder: split characters whole, invalid bytes replaced', async () => {
    const done = await sandbox.runCommand({
      cmd: 'sh',
      args: ['-c', "printf '\\342\\202'; sleep 0.1; printf '\\254 \\377\\n'"],
    });
    expect(await done.stdout()).toBe('€ \uFFFD\n');
  });

  it('retries of the SDK meet injected 5xx and 429 answers', async () => {
    emulator.inject({ kind: 'http-status', status: 503, method: 'GET', path: /\/cmd\/[^/]+$/, times: 1 });
    emulator.inject({ kind: 'http-status', status: 429, retryAfterSeconds: 0, method: 'GET', path: /\/cmd\/[^/]+$/, times: 1 });
    const command = await sandbox.runCommand({ cmd: 'true', detached: true });
    const finished = await command.wait();
    expect(finished.exitCode).toBe(0);
    const waits = emulator.requests.filter((r) => r.path.endsWith(`/cmd/${command.cmdId}`));
    expect(waits.map((r) => r.status)).toEqual([503, 429, 200]);
  });

  it('a dropped log stream and an error line surface as errors in logs()', async () => {
    const command = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'seq 1 2000'], detached: true });
    await command.wait();
    emulator.inject({ kind: 'truncate', route: 'logs', at: { bytes: 500 }, path: new RegExp(`/cmd/${command.cmdId}/logs$`) });
    await expect(
      (async () => {
        for await (const _ of command.logs()) void _;
      })(),
    ).rejects.toThrow();
    emulator.inject({ kind: 'error', route: 'logs', code: 'sandbox_stopped', message: 'stopped', at: 0, path: new RegExp(`/cmd/${command.cmdId}/logs$`) });
    await expect(
      (async () => {
        for await (const _ of command.logs()) void _;
      })(),
    ).rejects.toMatchObject({ name: 'StreamError', code: 'sandbox_stopped' });
  });

  it('delayed headers hold the answer', async () => {
    emulator.inject({ kind: 'delay', ms: 150, method: 'POST', path: /\/cmd$/ });
    const started = performance.now();
    const done = await sandbox.runCommand('true');
    expect(done.exitCode).toBe(0);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });

  it("keeps commands' output for replays outside its memory: served output does not accumulate in the process", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const kept = (): number => {
      gc();
      gc();
      return process.memoryUsage().arrayBuffers;
    };
    const size = 4 * 1024 * 1024;
    const script = `head -c ${size} /dev/zero | tr '\\0' a`;
    // Warm up, so that lazily allocated buffers are not counted.
    await (await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'echo warm'], detached: true })).wait();
    const before = kept();
    let last: { stdout(): Promise<string> } | undefined;
    for (let i = 0; i < 16; i++) {
      const command = await sandbox.runCommand({ cmd: 'sh', args: ['-c', script], detached: true });
      expect((await command.wait()).exitCode).toBe(0);
      last = command;
    }
    // 64 MiB of output served and kept for replays; held in memory, all of it stays.
    expect(kept() - before).toBeLessThan(16 * 1024 * 1024);
    // Still replayed whole, from the start.
    expect(await last!.stdout()).toBe('a'.repeat(size));
  });

  it('recordRequests: false keeps no request, nor the standard input they carried', async () => {
    const quiet = await VercelEmulator.start({ recordRequests: false, stdin: true });
    try {
      const box = await Sandbox.create({ ...quiet.credentials, fetch: quiet.fetch });
      const command = await box.runCommand({ cmd: 'sh', args: ['-c', 'wc -c'], detached: true });
      const chunk = Buffer.alloc(256 * 1024, 'x').toString('base64');
      const token = `Bearer ${quiet.credentials.token}`;
      const path = `${quiet.url}/v2/sandboxes/sessions/${box.currentSession().sessionId}/cmd/${command.cmdId}/stdin`;
      let offset = 0;
      for (let i = 0; i < 4; i++) {
        const answer = await fetch(path, { method: 'POST', headers: { authorization: token, 'content-type': 'application/json' }, body: JSON.stringify({ offset, data: chunk, close: i === 3 }) });
        expect(answer.status).toBe(200);
        offset = ((await answer.json()) as { offset: number }).offset;
      }
      expect((await command.wait()).exitCode).toBe(0);
      expect((await command.stdout()).trim()).toBe(String(1024 * 1024));
      expect(quiet.requests).toEqual([]);
    } finally {
      await quiet.close();
    }
  });

  it('stop() ends every process of the sandbox, and later calls get 410', async () => {
    const other = await Sandbox.create({ ...emulator.credentials, fetch: emulator.fetch });
    const command = await other.runCommand({ cmd: 'sh', args: ['-c', 'setsid sleep 30 & sleep 30'], detached: true });
    const sessionId = other.currentSession().sessionId;
    await until(() => emulator.processes(sessionId).length === 3, 10_000, () => `the command's three processes (found ${JSON.stringify(emulator.processes(sessionId).map((p) => p.cmdline))})`);
    await other.stop();
    expect(emulator.processes(sessionId)).toEqual([]);
    const error = await other.getCommand(command.cmdId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError<unknown>).response.status).toBe(410);
  });
});

describe('the end of a pipe', () => {
  it('turns an incomplete final sequence into U+FFFD before the log stream ends', async () => {
    for (let i = 0; i < 5; i++) {
      const done = await sandbox.runCommand({ cmd: 'sh', args: ['-c', "printf 'end \\342\\202'"] });
      expect(await done.stdout()).toBe('end \uFFFD');
    }
  });
});
