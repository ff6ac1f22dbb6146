// The background tools through the real MCP SDK client over stdio: start returns an id at once,
// read gives what is new since the last read, write feeds standard input, kill ends the tree, and
// the session's end ends every command it started.
import { describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ended, isLive } from '@sandstream/test-support/processes';
import type { JobOutput, JobStatus } from '../src/index.js';
import { connect, failureOf, readOf, type Session } from './harness.js';

const BOUND = 15_000;
// A tree of two that announces its pids, then echoes what it reads.
const TREE = 'sleep 300 & echo "pids $$ $!"; while read -r line; do echo "got $line"; done; echo bye >&2';

async function call(session: Session, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await session.client.callTool({ name, arguments: args })) as CallToolResult;
}

async function structured<T>(session: Session, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const result = await call(session, name, args);
  if (result.isError === true) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent as T;
}

/** Reads until `done` accepts what came so far (each read waits for something new). */
async function readUntil(session: Session, id: string, done: (text: { stdout: string; stderr: string; last: JobOutput }) => boolean): Promise<{ stdout: string; stderr: string; last: JobOutput }> {
  const seen = { stdout: '', stderr: '', last: undefined as unknown as JobOutput };
  const deadline = Date.now() + BOUND;
  for (;;) {
    const output = readOf(await call(session, 'sandbox_read', { id, waitMs: 2_000 }));
    seen.stdout += output.stdout;
    seen.stderr += output.stderr;
    seen.last = output;
    if (done(seen)) return seen;
    if (Date.now() > deadline) throw new Error(`read ${id}: not done after ${BOUND} ms; so far ${JSON.stringify(seen)}`);
  }
}

function pidsIn(stdout: string): number[] {
  return /pids (\d+) (\d+)/.exec(stdout)!.slice(1).map(Number);
}

describe('the background tools', () => {
  it('start, read what is new, write, close stdin, and the exact end', async () => {
    const session = await connect();
    try {
      const tools = (await session.client.listTools()).tools.map((tool) => tool.name);
      expect(tools).toEqual(['sandbox_exec', 'sandbox_shell', 'sandbox_start', 'sandbox_read', 'sandbox_write', 'sandbox_kill', 'sandbox_list', 'sandbox_resize']);
      const started = await structured<JobStatus>(session, 'sandbox_start', { command: TREE });
      expect(started).toMatchObject({ id: 'job-1', state: 'running', argv: ['sh', '-c', TREE] });
      const first = await readUntil(session, started.id, (seen) => /pids \d+ \d+\n/.test(seen.stdout));
      await structured(session, 'sandbox_write', { id: started.id, text: 'one\ntwo\n' });
      const echoed = await readUntil(session, started.id, (seen) => seen.stdout.includes('got two\n'));
      // Nothing twice: the second read gave only what followed the first.
      expect(echoed.stdout).toBe('got one\ngot two\n');
      const [, child] = pidsIn(first.stdout);
      await structured(session, 'sandbox_write', { id: started.id, text: '', end: true });
      const last = await readUntil(session, started.id, (seen) => seen.last.state !== 'running');
      expect(last.stderr).toBe('bye\n');
      expect(last.last).toMatchObject({ state: 'exited', exitCode: 0, signal: null });
      expect(await structured(session, 'sandbox_list')).toEqual({ jobs: [{ id: 'job-1', argv: ['sh', '-c', TREE], state: 'exited', exitCode: 0, signal: null }] });
      // The shell exited; what it left behind was ended by the grace period's sequence.
      await ended(child!, BOUND, 'the child the shell left');
    } finally {
      await session.client.close();
    }
  });

  it('kill ends the whole tree and the command stays listed; bad input is a tool error with the code', async () => {
    const session = await connect();
    try {
      const { id } = await structured<JobStatus>(session, 'sandbox_start', { command: TREE });
      const pids = pidsIn((await readUntil(session, id, (seen) => /pids \d+ \d+\n/.test(seen.stdout))).stdout);
      expect(pids.map(isLive)).toEqual([true, true]);
      const killed = await structured<JobStatus>(session, 'sandbox_kill', { id });
      expect(killed).toMatchObject({ state: 'exited', signal: 'SIGTERM' });
      for (const pid of pids) await ended(pid, BOUND, `pid ${pid} of the killed tree`);
      expect(failureOf(await call(session, 'sandbox_read', { id: 'job-9' }))).toMatchObject({ code: 'COMMAND_NOT_FOUND' });
      expect(failureOf(await call(session, 'sandbox_start', { argv: 'ls' }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.argv' });
      expect(failureOf(await call(session, 'sandbox_start', { argv: ['definitely-not-a-program-x'] }))).toMatchObject({ code: 'SPAWN_FAILED' });
      expect(failureOf(await call(session, 'sandbox_kill', { id, signal: 'SIGNOPE' }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.signal' });
      expect(failureOf(await call(session, 'sandbox_list', { all: true }))).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments.all' });
      expect((await structured<{ jobs: JobStatus[] }>(session, 'sandbox_list')).jobs.map((job) => job.id)).toEqual([id]);
    } finally {
      await session.client.close();
    }
  });

  it('the client closing the session ends every background command, whole trees', async () => {
    const session = await connect();
    const trees: number[][] = [];
    for (let i = 0; i < 3; i++) {
      const { id } = await structured<JobStatus>(session, 'sandbox_start', { command: TREE });
      trees.push(pidsIn((await readUntil(session, id, (seen) => /pids \d+ \d+\n/.test(seen.stdout))).stdout));
    }
    await session.client.close();
    await ended(session.pid, BOUND, 'the server');
    for (const pid of trees.flat()) await ended(pid, BOUND, `pid ${pid} of a background command`);
  });
});
