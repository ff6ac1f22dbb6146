// Time, through the SDK's client over stdio: exec's default limit (shortened to 2 s here, where
// the real one is 50 s) reports a silent command as timed out, with its partial output and its
// tree gone, before the client would give up; read with waitMs waits for quiet or for a pattern.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ended } from '@sandstream/test-support/processes';
import { DEFAULT_EXEC_TIMEOUT_MS, type JobStatus } from '../src/index.js';
import { connect, failureOf, outcome, readOf, type Session } from './harness.js';

const BOUND = 15_000;

let session: Session;
beforeAll(async () => {
  session = await connect(['--adapter', 'local', '--timeout', '2000', '--max-timeout', '10000']);
});
afterAll(async () => {
  await session?.client.close();
});

async function call(name: string, args: Record<string, unknown>, timeout?: number): Promise<CallToolResult> {
  return (await session.client.callTool({ name, arguments: args }, undefined, timeout === undefined ? undefined : { timeout })) as CallToolResult;
}

describe('time', () => {
  it('the default exec limit is under the SDK client default request timeout of 60 s', () => {
    expect(DEFAULT_EXEC_TIMEOUT_MS).toBeLessThan(60_000);
  });

  it('a silent command past the default limit: timed out (not cancelled), partial output kept, the tree gone, said at the top', async () => {
    // The client would give up after 4 s and reject: a result at all is the server's 2 s limit
    // answering first, as 50 s does under the real 60 s.
    const result = await call('sandbox_exec', { command: 'sleep 300 & echo "child $!"; echo "parent $$"; sleep 5' }, 4_000);
    const out = outcome(result);
    expect(out).toMatchObject({ timedOut: true, timeoutMs: 2000, exitCode: null });
    expect(out.text.split('\n')[0]).toMatch(/^no exit code: ended by SIG[A-Z]+; TIMED OUT at the 2000 ms limit/);
    const pids = [...out.stdout.matchAll(/(?:child|parent) (\d+)/g)].map((match) => Number(match[1]));
    expect(pids).toHaveLength(2);
    for (const pid of pids) await ended(pid, BOUND, `pid ${pid} of the timed-out tree`);
  });

  it('a call may give a longer timeout up to the maximum, and the description states both', async () => {
    expect(outcome(await call('sandbox_exec', { command: 'sleep 2.5; echo late', timeout: 5_000 }))).toMatchObject({ timedOut: false, stdout: 'late\n', timeoutMs: 5_000 });
    expect(failureOf(await call('sandbox_exec', { command: 'true', timeout: 10_001 }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.timeout', message: expect.stringContaining('sandbox_start') });
    const exec = (await session.client.listTools()).tools.find((tool) => tool.name === 'sandbox_exec')!;
    expect(exec.description).toContain('Time limit: 2 s by default, up to 10 s');
  });

  it('read with waitMs waits until the output goes quiet, not for the first bytes', async () => {
    const { id } = (await call('sandbox_start', { command: 'echo a; sleep 0.05; echo b; sleep 0.05; echo c; sleep 4; echo late' })).structuredContent as unknown as JobStatus;
    const read = readOf(await call('sandbox_read', { id, waitMs: 10_000 }));
    // Quiet after c: answered before "late" (4 s on) and so before waitMs, with all three lines.
    expect(read.stdout).toBe('a\nb\nc\n');
    expect(read.state).toBe('running');
    // With no output at all yet, it waits (up to waitMs) instead of answering at once.
    const silent = (await call('sandbox_start', { command: 'sleep 1; echo woke' })).structuredContent as unknown as JobStatus;
    expect(readOf(await call('sandbox_read', { id: silent.id, waitMs: 10_000 })).stdout).toBe('woke\n');
    await call('sandbox_kill', { id });
  });

  it('read with until waits for the pattern even while output keeps coming, says whether it matched, and checks the pattern', async () => {
    const ticks = 'i=0; while [ $i -lt 20 ]; do echo "tick $i"; i=$((i+1)); sleep 0.1; done; echo "server listening on 4000"; while :; do echo tick; sleep 0.1; done';
    const { id } = (await call('sandbox_start', { command: ticks })).structuredContent as unknown as JobStatus;
    const read = readOf(await call('sandbox_read', { id, waitMs: 20_000, until: 'listening on \\d+' }));
    expect(read.matched).toBe(true);
    expect(read.stdout).toContain('tick 19\nserver listening on 4000\n');
    expect(read.text.split('\n')[0]).toBe(`${id}: running; "listening on \\d+" matched`);
    const missing = readOf(await call('sandbox_read', { id, waitMs: 500, until: 'never printed' }));
    expect(missing.matched).toBe(false);
    expect(missing.text.split('\n')[0]).toContain('NOT seen yet');
    expect(failureOf(await call('sandbox_read', { id, until: '(' }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.until' });
    await call('sandbox_kill', { id });
  });
});

describe('time, at the real defaults', () => {
  let defaults: Session;
  beforeAll(async () => {
    defaults = await connect(['--adapter', 'local']);
  });
  afterAll(async () => {
    await defaults?.client.close();
  });

  // The SDK client's own default: a call it has not heard back on within 60 s is cancelled and
  // rejects with a request timeout. A result at all, reporting the server's limit, is the proof.
  it('a silent command longer than 60 s is reported as timed out at the 50 s default, never cancelled by the client', { timeout: 120_000 }, async () => {
    const result = (await defaults.client.callTool({ name: 'sandbox_exec', arguments: { command: 'echo "pid $$"; sleep 70' } })) as CallToolResult;
    const out = outcome(result);
    expect(out).toMatchObject({ timedOut: true, timeoutMs: DEFAULT_EXEC_TIMEOUT_MS, exitCode: null });
    expect(out.text.split('\n')[0]).toContain(`TIMED OUT at the ${DEFAULT_EXEC_TIMEOUT_MS} ms limit`);
    const pid = Number(/pid (\d+)/.exec(out.stdout)?.[1]);
    await ended(pid, BOUND, `pid ${pid} of the timed-out command`);
  });
});
