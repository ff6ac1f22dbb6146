import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ended, isLive } from '@sandstream/test-support/processes';
import { CLI, connect, execWithProgress, outcome, type SeenLine } from './harness.js';

// A tree of two: the shell and a child it forked, each announcing its pid.
const TREE = 'sleep 300 & echo "child $!"; echo "parent $$"; wait';
// The same, deaf to SIGTERM (the ignored disposition is inherited by the child): only SIGKILL, after the grace period, ends it.
const DEAF_TREE = `trap '' TERM; ${TREE}`;
const BOUND = 15_000;

/** Collects the pids a TREE announces; `both` resolves once it has the two. */
function treePids(): { onLine: (line: SeenLine) => void; both: Promise<{ child: number; parent: number }> } {
  const pids: Record<string, number> = {};
  let resolve!: (pids: { child: number; parent: number }) => void;
  const both = new Promise<{ child: number; parent: number }>((r) => (resolve = r));
  return {
    onLine: (line) => {
      const match = /^(child|parent) (\d+)\n$/.exec(line.text);
      if (match) pids[match[1]!] = Number(match[2]);
      if (pids.child !== undefined && pids.parent !== undefined) resolve({ child: pids.child, parent: pids.parent });
    },
    both,
  };
}

describe('the command tree ends with the request or the session', () => {
  for (const [what, command] of [
    ['a tree', TREE],
    ['a tree that ignores SIGTERM (SIGKILL after the grace period)', DEAF_TREE],
  ] as const) {
    it(`notifications/cancelled terminates ${what}, and the server keeps serving`, async () => {
      const session = await connect();
      try {
        const { onLine, both } = treePids();
        const controller = new AbortController();
        const call = execWithProgress(session.client, { command }, onLine, { signal: controller.signal });
        const { child, parent } = await both;
        expect(isLive(child) && isLive(parent)).toBe(true);
        controller.abort('the test cancels');
        await expect(call).rejects.toThrow();
        await ended(parent, BOUND, 'the shell of the cancelled call');
        await ended(child, BOUND, 'the child the shell forked');
        const after = await session.client.callTool({ name: 'sandbox_exec', arguments: { argv: ['echo', 'next'] } });
        expect(outcome(after as never).stdout).toBe('next\n');
      } finally {
        await session.client.close();
      }
    });
  }

  it('the client closing the session ends the server and the commands still running', async () => {
    const session = await connect();
    const { onLine, both } = treePids();
    const call = execWithProgress(session.client, { command: TREE }, onLine);
    const { child, parent } = await both;
    await session.client.close();
    await expect(call).rejects.toThrow();
    await ended(session.pid, BOUND, 'the server');
    await ended(parent, BOUND, 'the shell');
    await ended(child, BOUND, 'the child the shell forked');
  });

  it('a client that dies (SIGKILL, so its end of the pipes just closes) takes the server and its commands with it', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/client.mjs', import.meta.url));
    const client = spawn(process.execPath, [fixture, CLI, TREE], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pids: { server?: number; child?: number; parent?: number } = {};
    for await (const text of createInterface({ input: client.stdout })) {
      const message = JSON.parse(text) as { server?: number; line?: string };
      if (message.server !== undefined) pids.server = message.server;
      const match = /^(child|parent) (\d+)\n$/.exec(message.line ?? '');
      if (match) pids[match[1] as 'child' | 'parent'] = Number(match[2]);
      if (pids.server !== undefined && pids.child !== undefined && pids.parent !== undefined) break;
    }
    const exit = new Promise((resolve) => client.once('exit', resolve));
    client.kill('SIGKILL');
    await exit;
    await ended(pids.server!, BOUND, 'the server of the dead client');
    await ended(pids.parent!, BOUND, 'the shell');
    await ended(pids.child!, BOUND, 'the child the shell forked');
  });
});
