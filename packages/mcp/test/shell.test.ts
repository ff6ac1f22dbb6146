// The session shell (ADR-0055), through the SDK's client over stdio: cd and export carry over
// from call to call of one MCP session and of no other; `exit N` keeps N and saves; reset starts
// afresh; each call is still one command, ended with its whole tree on cancellation and timeout.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DEFAULT_GRACE_MS } from '@sandstream/types/runtime';
import { ended } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { waitFor } from '@sandstream/test-support/timing';
import { connect, failureOf, outcome, type Session } from './harness.js';
import { isolation } from './isolation.js';

let session: Session;
let dir: string;
beforeAll(async () => {
  session = await connect();
  dir = mkdtempSync(join(tmpdir(), 'sandstream-mcp-shell-'));
});
afterAll(async () => {
  await session?.client.close();
  rmSync(dir, { recursive: true, force: true });
});

async function shell(args: Record<string, unknown>, on = session, options: { signal?: AbortSignal; timeout?: number } = {}): Promise<CallToolResult> {
  return (await on.client.callTool({ name: 'sandbox_shell', arguments: args }, undefined, options)) as CallToolResult;
}

/** The pids a command wrote to `file` (its shell and a child), once both are there. */
async function pidsIn(file: string): Promise<number[]> {
  let pids: number[] = [];
  await waitFor(
    () => {
      pids = existsSync(file) ? readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number) : [];
      return pids.length === 2;
    },
    20_000,
    `the pids in ${file}`,
  );
  return pids;
}

describe('the session shell', () => {
  it('keeps cd and export across three calls', async () => {
    await shell({ command: 'true', reset: true });
    const first = outcome(await shell({ command: `mkdir -p '${dir}/app/src' && cd '${dir}/app' && export STAGE=one` }));
    expect(first).toMatchObject({ exitCode: 0, timedOut: false });
    const second = outcome(await shell({ command: 'pwd; echo "$STAGE"; cd src; export STAGE="$STAGE two" OTHER=x' }));
    expect(second.stdout).toBe(`${dir}/app\none\n`);
    const third = outcome(await shell({ command: 'pwd; echo "$STAGE/$OTHER"; cd - >/dev/null; pwd; sh -c \'echo "child sees $STAGE"\'' }));
    expect(third.stdout).toBe(`${dir}/app/src\none two/x\n${dir}/app\nchild sees one two\n`);
    // exec stays stateless.
    expect(outcome((await session.client.callTool({ name: 'sandbox_exec', arguments: { command: 'echo "${STAGE-unset}"' } })) as CallToolResult).stdout).toBe('unset\n');
  });

  it('exit 3 keeps the status 3 and still saves the state; set -e too', async () => {
    const exited = outcome(await shell({ command: `cd '${dir}' && export EXITED=yes && exit 3`, reset: true }));
    expect(exited).toMatchObject({ exitCode: 3, signal: null });
    expect(exited.text.split('\n')[0]).toMatch(/^exit code 3; \d+ ms$/);
    expect(outcome(await shell({ command: 'set -e; export AFTER=1; false; echo not reached' }))).toMatchObject({ exitCode: 1, stdout: '' });
    expect(outcome(await shell({ command: 'pwd; echo "$EXITED $AFTER"' })).stdout).toBe(`${dir}\nyes 1\n`);
  });

  it('two MCP sessions (two clients) do not share state', async () => {
    const other = await connect();
    try {
      await shell({ command: `cd '${dir}' && export OWNER=first`, reset: true });
      await shell({ command: `cd / && export OWNER=second` }, other);
      expect(outcome(await shell({ command: 'pwd; echo "$OWNER"' })).stdout).toBe(`${dir}\nfirst\n`);
      expect(outcome(await shell({ command: 'pwd; echo "$OWNER"' }, other)).stdout).toBe('/\nsecond\n');
    } finally {
      await other.client.close();
    }
  });

  it('reset: true starts from the default directory and environment', async () => {
    const home = outcome(await shell({ command: 'pwd', reset: true })).stdout;
    await shell({ command: `cd '${dir}' && export KEPT=1` });
    expect(outcome(await shell({ command: 'pwd; echo "${KEPT-unset}"' })).stdout).toBe(`${dir}\n1\n`);
    expect(outcome(await shell({ command: 'pwd; echo "${KEPT-unset}"', reset: true })).stdout).toBe(`${home}unset\n`);
    // And the reset state is what the next call starts from.
    expect(outcome(await shell({ command: 'pwd; echo "${KEPT-unset}"', reset: null })).stdout).toBe(`${home}unset\n`);
  });

  // A tree of two (the shell and a child it forked) that writes its pids to a file, after an export
  // that must not be saved. The deaf one ignores SIGTERM: only the SIGKILL after the grace period ends it.
  for (const [what, prelude] of [
    ['a tree', ''],
    ['a tree that ignores SIGTERM', "trap '' TERM; "],
  ] as const) {
    it(`cancelling a call (the request's AbortSignal) ends ${what} within the grace period, saves nothing, and the shell serves the next call`, async () => {
      await shell({ command: 'export CANCELLED=no', reset: true });
      // The margin over the grace period, scaled from this machine's round trip now.
      const started = performance.now();
      for (let i = 0; i < 3; i++) await shell({ command: 'true' });
      const latency = (performance.now() - started) / 3;
      const bound = DEFAULT_GRACE_MS + Math.max(1_000, 20 * latency);
      const file = join(dir, `pids-${what.length}`);
      const controller = new AbortController();
      const call = shell({ command: `${prelude}export CANCELLED=yes; sleep 300 & echo "$! $$" > '${file}'; wait` }, session, { signal: controller.signal });
      const pids = await pidsIn(file);
      controller.abort('the test cancels');
      await expect(call).rejects.toThrow();
      const aborted = performance.now();
      for (const pid of pids) await ended(pid, bound, `pid ${pid} of the cancelled call`);
      expect(performance.now() - aborted).toBeLessThan(bound);
      // The busy mark is cleared once the call's tree is gone; the next call may arrive before that, so it waits for it.
      let next: CallToolResult | undefined;
      await waitFor(
        async () => (next = await shell({ command: 'echo "$CANCELLED"' })).isError !== true,
        bound,
        () => `the next call: ${JSON.stringify(next?.structuredContent)}`,
      );
      expect(outcome(next!).stdout).toBe('no\n');
    });
  }

  it('a call past its timeout reports timed out, its tree gone, and saves nothing', async () => {
    await shell({ command: 'export TIMED=no', reset: true });
    const file = join(dir, 'pids-timeout');
    const result = outcome(await shell({ command: `export TIMED=yes; echo before; sleep 300 & echo "$! $$" > '${file}'; wait`, timeout: 1_000 }));
    expect(result).toMatchObject({ timedOut: true, timeoutMs: 1_000, exitCode: null, stdout: 'before\n' });
    expect(result.signal).not.toBeNull();
    expect(result.text.split('\n')[0]).toMatch(/^no exit code: ended by SIG[A-Z]+; TIMED OUT at the 1000 ms limit/);
    for (const pid of await pidsIn(file)) await ended(pid, DEFAULT_GRACE_MS + 10_000, `pid ${pid} of the timed-out call`);
    expect(outcome(await shell({ command: 'echo "$TIMED"' })).stdout).toBe('no\n');
  });

  it('refuses a second call while one runs (INVALID_STATE), then serves again', async () => {
    const gate = join(dir, 'gate');
    const first = shell({ command: `echo started > '${gate}.started'; while [ ! -e '${gate}' ]; do sleep 0.01; done; echo done`, timeout: 20_000 });
    await waitFor(() => existsSync(`${gate}.started`), 20_000, 'the first call to start');
    expect(failureOf(await shell({ command: 'echo second' }))).toMatchObject({ code: 'INVALID_STATE', message: expect.stringContaining('one at a time') });
    writeFileSync(gate, '');
    expect(outcome(await first).stdout).toBe('done\n');
    expect(outcome(await shell({ command: 'echo second' })).stdout).toBe('second\n');
  });

  it('takes stdin, a strict-mode call with nulls, and rejects bad arguments with their key', async () => {
    const strict = await shell({ command: 'cat; exit 2', timeout: null, stdin: 'in\n', reset: null });
    expect(outcome(strict)).toMatchObject({ exitCode: 2, stdout: 'in\n', timeoutMs: 50_000 });
    expect(failureOf(await shell({ command: 'echo a\u0000b' }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.command' });
    expect(failureOf(await shell({ command: '' }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.command' });
    expect(failureOf(await shell({ command: 'true', cwd: '/' }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.cwd' });
    expect(failureOf(await shell({ command: 'true', timeout: 600_001 }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.timeout' });
  });

  unless(it, isolation)('in namespaces isolation the state lives in the private /tmp: cd and export carry over, in a directory of mode 0700', async () => {
    const isolated = await connect(['--adapter', 'local', '--isolation', 'namespaces']);
    try {
      await shell({ command: 'mkdir -p /workspace/app && cd /workspace/app && export MODE=isolated' }, isolated);
      const seen = outcome(await shell({ command: 'pwd; echo "$MODE"; stat -c %a "${TMPDIR:-/tmp}"/.sandstream-shell-* "${TMPDIR:-/tmp}"/.sandstream-shell-*/state' }, isolated));
      expect(seen.stdout).toBe('/workspace/app\nisolated\n700\n600\n');
    } finally {
      await isolated.client.close();
    }
  });
});
