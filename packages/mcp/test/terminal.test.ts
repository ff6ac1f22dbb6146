// Terminals (spec 1.5, capability `pty`) through the real MCP SDK client: an interactive Python
// driven on a terminal with start, write (text and named keys), read and resize; exec on a
// terminal; and a sandbox without the capability, which neither offers nor accepts terminals.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createLocalSandbox } from '@sandstream/adapter-local';
import type { Sandbox } from '@sandstream/types';
import { ended, isLive } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { createExecServer, type JobStatus } from '../src/index.js';
import { connect, failureOf, outcome, readOf, type Session } from './harness.js';
import { isolation } from './isolation.js';

const BOUND = 15_000;
const home = mkdtempSync(join(tmpdir(), 'sandstream-mcp-pty-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));
// An empty HOME and no startup file: nothing of the user's shapes the session.
const PYTHON = { argv: ['python3', '-i', '-q'], env: [`HOME=${home}`, 'PYTHONSTARTUP='] };

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

async function structured<T>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = await call(client, name, args);
  if (result.isError === true) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent as T;
}

/** Reads until `done` accepts the output so far (each read waits for something new), within BOUND. */
async function readUntil(client: Client, id: string, done: (stdout: string) => boolean, raw = false): Promise<string> {
  let stdout = '';
  const deadline = Date.now() + BOUND;
  for (;;) {
    stdout += readOf(await call(client, 'sandbox_read', { id, waitMs: 1_000, ...(raw && { raw }) })).stdout;
    if (done(stdout)) return stdout;
    if (Date.now() > deadline) throw new Error(`read ${id}: not done after ${BOUND} ms; so far ${JSON.stringify(stdout)}`);
  }
}

describe('terminals', () => {
  it('drives python3 -i on a terminal: a line, ctrl-c, a resize, and kill ends it and its child', async () => {
    const session: Session = await connect();
    const { client } = session;
    try {
      const tools = (await client.listTools()).tools;
      expect(tools.map((tool) => tool.name)).toEqual(['sandbox_exec', 'sandbox_shell', 'sandbox_start', 'sandbox_read', 'sandbox_write', 'sandbox_kill', 'sandbox_list', 'sandbox_resize']);
      expect(Object.keys(tools.find((tool) => tool.name === 'sandbox_start')!.inputSchema.properties!)).toContain('pty');

      const started = await structured<JobStatus>(client, 'sandbox_start', { ...PYTHON, pty: { cols: 100, rows: 30 } });
      expect(started).toMatchObject({ state: 'running', terminal: { cols: 100, rows: 30 } });
      const { id } = started;
      expect(await readUntil(client, id, (out) => out.endsWith('>>> '))).toBe('>>> ');

      await structured(client, 'sandbox_write', { id, text: 'print(6*7)', keys: ['enter'] });
      // The echo of the line, then the answer, as text: no CR, no escape sequence.
      const answer = await readUntil(client, id, (out) => /^42\n>>> $/m.test(out));
      expect(answer).toBe('print(6*7)\n42\n>>> ');

      await structured(client, 'sandbox_write', { id, keys: ['ctrl-c'] });
      expect(await readUntil(client, id, (out) => /KeyboardInterrupt\n>>> $/.test(out))).toContain('KeyboardInterrupt');

      // The raw bytes stay available: CR LF as the terminal gave it.
      await structured(client, 'sandbox_write', { id, text: 'print(1+1)\r' });
      expect(await readUntil(client, id, (out) => out.includes('2\r\n>>> '), true)).toContain('print(1+1)\r\n2\r\n');

      const resized = await structured<JobStatus>(client, 'sandbox_resize', { id, cols: 50, rows: 20 });
      expect(resized.terminal).toEqual({ cols: 50, rows: 20 });
      expect((await structured<{ jobs: JobStatus[] }>(client, 'sandbox_list')).jobs[0]).toMatchObject({ id, terminal: { cols: 50, rows: 20 } });
      await structured(client, 'sandbox_write', { id, text: 'import os, shutil, subprocess; print(shutil.get_terminal_size())', keys: ['enter'] });
      expect(await readUntil(client, id, (out) => out.includes('os.terminal_size(columns=50, lines=20)\n'))).toContain('columns=50, lines=20');

      await structured(client, 'sandbox_write', { id, text: 'child = subprocess.Popen(["sleep", "300"]); print("pids", os.getpid(), child.pid)', keys: ['enter'] });
      const pids = /pids (\d+) (\d+)\n/.exec(await readUntil(client, id, (out) => /pids \d+ \d+\n/.test(out)))!.slice(1).map(Number);
      expect(pids.map(isLive)).toEqual([true, true]);

      expect(failureOf(await call(client, 'sandbox_write', { id, keys: ['ctrl-nope'] }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.keys.0' });
      expect(failureOf(await call(client, 'sandbox_resize', { id, cols: 0, rows: 20 }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.cols' });

      const killed = await structured<JobStatus>(client, 'sandbox_kill', { id });
      expect(killed.state).toBe('exited');
      for (const pid of pids) await ended(pid, BOUND, `pid ${pid} of the python session`);
      expect(failureOf(await call(client, 'sandbox_resize', { id, cols: 80, rows: 24 }))).toMatchObject({ code: 'INVALID_STATE' });
    } finally {
      await client.close();
    }
  });

  it('the client closing the session ends a python on a terminal and what it started', async () => {
    const session = await connect();
    const { id } = await structured<JobStatus>(session.client, 'sandbox_start', { ...PYTHON, pty: true });
    await readUntil(session.client, id, (out) => out.endsWith('>>> '));
    await structured(session.client, 'sandbox_write', { id, text: 'import os, subprocess; child = subprocess.Popen(["sleep", "300"]); print("pids", os.getpid(), child.pid)', keys: ['enter'] });
    const pids = /pids (\d+) (\d+)\n/.exec(await readUntil(session.client, id, (out) => /pids \d+ \d+\n/.test(out)))!.slice(1).map(Number);
    await session.client.close();
    await ended(session.pid, BOUND, 'the server');
    for (const pid of pids) await ended(pid, BOUND, `pid ${pid} of the python session`);
  });

  unless(it, isolation)("isolation 'namespaces': python3 -i on the sandbox's own terminal, a line, ctrl-c, a resize, and kill leaves nothing running", async () => {
    const { client } = await connect(['--adapter', 'local', '--isolation', 'namespaces']);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('sandbox_resize');
      // Inside the sandbox the home is its own: the variables only keep the session plain.
      const { id } = await structured<JobStatus>(client, 'sandbox_start', { argv: PYTHON.argv, env: ['PYTHONSTARTUP='], pty: { cols: 100, rows: 30 } });
      await readUntil(client, id, (out) => out.endsWith('>>> '));
      await structured(client, 'sandbox_write', { id, text: 'import os; print(6*7, os.ttyname(0))', keys: ['enter'] });
      expect(await readUntil(client, id, (out) => /^42 \/dev\/pts\/\d+\n>>> $/m.test(out))).toMatch(/42 \/dev\/pts\/\d+/);
      await structured(client, 'sandbox_write', { id, keys: ['ctrl-c'] });
      await readUntil(client, id, (out) => /KeyboardInterrupt\n>>> $/.test(out));
      await structured(client, 'sandbox_resize', { id, cols: 50, rows: 20 });
      await structured(client, 'sandbox_write', { id, text: 'import shutil, subprocess; child = subprocess.Popen(["sleep", "300"]); print(shutil.get_terminal_size(), child.pid)', keys: ['enter'] });
      await readUntil(client, id, (out) => /columns=50, lines=20\) \d+\n/.test(out));
      expect((await structured<JobStatus>(client, 'sandbox_kill', { id })).state).toBe('exited');
      // Seen from inside: no python and no sleep left in the sandbox.
      const left = outcome(await call(client, 'sandbox_exec', { command: 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < "$f"; echo; done 2>/dev/null | grep -e python3 -e "sleep 300" | grep -v grep || echo none' }));
      expect(left.stdout).toBe('none\n');
    } finally {
      await client.close();
    }
  });

  it('exec on a terminal: the command has a tty, the output is text, raw gives the bytes', async () => {
    const { client } = await connect();
    try {
      const tty = outcome(await call(client, 'sandbox_exec', { command: 'test -t 0 && test -t 1 && echo tty; echo "$TERM" >&2', pty: true }));
      expect(tty).toMatchObject({ exitCode: 0, stdout: 'tty\nxterm-256color\n', stderr: '', terminal: { cols: 120, rows: 40 } });
      const colour = "printf '\\033[31mred\\033[0m\\n'; stty size";
      expect(outcome(await call(client, 'sandbox_exec', { command: colour, pty: { cols: 77, rows: 11 } })).stdout).toBe('red\n11 77\n');
      expect(outcome(await call(client, 'sandbox_exec', { command: colour, pty: { cols: 77, rows: 11 }, raw: true })).stdout).toBe('\x1b[31mred\x1b[0m\r\n11 77\r\n');
      expect(outcome(await call(client, 'sandbox_exec', { command: 'test -t 1 || echo pipe' })).stdout).toBe('pipe\n');
      expect(failureOf(await call(client, 'sandbox_exec', { command: 'true', raw: true }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.raw' });
      expect(failureOf(await call(client, 'sandbox_exec', { command: 'true', pty: { cols: 70000, rows: 1 } }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.pty.cols' });
    } finally {
      await client.close();
    }
  });

  it('a sandbox without pty offers no terminal, and says so when asked for one', async () => {
    const local = createLocalSandbox();
    // The local sandbox as one without the capability.
    const plain = new Proxy(local, {
      get(target, key) {
        if (key === 'capabilities') return { ...target.capabilities, pty: false };
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as Sandbox;
    const server = createExecServer(plain);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'no-pty', version: '0.0.0' });
    await client.connect(clientSide);
    try {
      const tools = (await client.listTools()).tools;
      expect(tools.map((tool) => tool.name)).toEqual(['sandbox_exec', 'sandbox_shell', 'sandbox_start', 'sandbox_read', 'sandbox_write', 'sandbox_kill', 'sandbox_list']);
      for (const tool of tools) expect(Object.keys(tool.inputSchema.properties ?? {})).not.toContain('pty');
      for (const [name, args] of [
        ['sandbox_exec', { command: 'true', pty: true }],
        ['sandbox_start', { command: 'true', pty: { cols: 80, rows: 24 } }],
        ['sandbox_resize', { id: 'job-1', cols: 80, rows: 24 }],
      ] as const) {
        const error = failureOf(await call(client, name, args));
        expect(error, name).toMatchObject({ code: 'CAPABILITY_NOT_SUPPORTED' });
        expect(error.message).toContain('pty');
      }
      expect(outcome(await call(client, 'sandbox_exec', { command: 'echo still here' })).stdout).toBe('still here\n');
    } finally {
      await client.close();
      await server.closed;
    }
  });
});
