// The command line server on the remote adapters: `--adapter e2b` against the envd emulator's
// control plane, `--adapter docker` against a dockerd of this file's own. The exec tool and the
// background tools and the session shell through the MCP SDK's client, and the session's end ending a background tree.
import { describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startEnvdEmulator } from '@sandstream/adapter-e2b/emulator';
import { dockerdMissing, startDockerd } from '@sandstream/adapter-docker/engine';
import { markedProcesses } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { waitFor } from '@sandstream/test-support/timing';
import type { JobStatus } from '../src/index.js';
import { connect, outcome, readOf, type Session } from './harness.js';

const BOUND = 30_000;
const MARK = 'SANDSTREAM_MCP_REMOTE_TEST';

async function structured<T>(session: Session, name: string, args: Record<string, unknown>): Promise<T> {
  const result = (await session.client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError === true) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent as T;
}

/** exec, then a background tree started, read and left running when the client closes: it must end. */
async function exercise(args: readonly string[], mark: string): Promise<void> {
  const session = await connect(args);
  let pids: number[] = [];
  try {
    const ran = outcome((await session.client.callTool({ name: 'sandbox_exec', arguments: { command: 'echo hello; exit 3' } })) as never);
    expect([ran.exitCode, ran.stdout]).toEqual([3, 'hello\n']);
    // The session shell: its state file in the sandbox's own temporary directory, with its sh.
    const shell = async (command: string) => outcome((await session.client.callTool({ name: 'sandbox_shell', arguments: { command } })) as never);
    expect((await shell(`mkdir -p /tmp/shell-${mark} && cd /tmp/shell-${mark} && export STAGE=${mark}; exit 4`)).exitCode).toBe(4);
    expect(await shell('pwd; echo "$STAGE"')).toMatchObject({ exitCode: 0, stdout: `/tmp/shell-${mark}\n${mark}\n` });
    expect(await shell('cd / && rmdir "$OLDPWD" && pwd')).toMatchObject({ exitCode: 0, stdout: '/\n' });
    const job = await structured<JobStatus>(session, 'sandbox_start', { command: 'sleep 300 & echo "started $!"; wait', env: [`${MARK}=${mark}`] });
    let seen = '';
    const deadline = Date.now() + BOUND;
    while (!/started \d+/.test(seen)) {
      seen += readOf((await session.client.callTool({ name: 'sandbox_read', arguments: { id: job.id, waitMs: 2_000 } })) as CallToolResult).stdout;
      if (Date.now() > deadline) throw new Error(`no output from ${job.id}: ${JSON.stringify(seen)}`);
    }
    // The sandbox's processes are this host's (the emulator runs them, and so does the Engine).
    pids = markedProcesses(MARK, mark).map((p) => p.pid);
    expect(pids.length).toBeGreaterThan(0);
  } finally {
    await session.client.close();
  }
  await waitFor(() => markedProcesses(MARK, mark).length === 0, BOUND, `the background tree (pids ${pids.join(' ')}) after the session ended`);
}

describe('sandstream-mcp on the remote adapters', () => {
  it('--adapter e2b, on the envd emulator: exec, a background command, and the session end ending its tree', async () => {
    const envd = await startEnvdEmulator({ controlPlane: { apiKey: 'e2b_test_key' } });
    try {
      const connection = { apiKey: 'e2b_test_key', apiUrl: envd.url, sandboxUrl: envd.url };
      await exercise(['--adapter', 'e2b', '--options', JSON.stringify({ connection })], 'e2b');
      // The sandbox the server created was its own: the session's end killed it.
      expect(envd.sandboxes().every((sandbox) => sandbox.killedAt !== undefined)).toBe(true);
    } finally {
      await envd.close();
    }
  }, 120_000);

  const noDocker = process.env['CI'] !== undefined ? undefined : dockerdMissing();
  unless(it, noDocker)('--adapter docker, on a real Engine: exec, a background command, and the session end ending its tree', async () => {
    const engine = await startDockerd();
    try {
      const image = await engine.importBusybox('sandstream-busybox:mcp', { tools: ['/usr/bin/env', '/usr/bin/nice', '/usr/bin/prlimit'] });
      await exercise(['--adapter', 'docker', '--options', JSON.stringify({ socketPath: engine.socketPath, image })], 'docker');
    } finally {
      await engine.stop();
    }
  }, 180_000);
});
