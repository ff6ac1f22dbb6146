// exec and the session shell as MCP tasks (the 2025-11-25 revision; ADR-0056),
// driven by the MCP SDK's own client: created at once, polled, read, and
// cancelled with the command's whole tree; plain calls unchanged beside them.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ResponseMessage } from '@modelcontextprotocol/sdk/experimental/tasks';
import { CallToolResultSchema, ProgressNotificationSchema, type CallToolResult, type Task } from '@modelcontextprotocol/sdk/types.js';
import { markedProcesses } from '@sandstream/test-support/processes';
import { waitFor } from '@sandstream/test-support/timing';
import { MAX_RUNNING_TASKS } from '../src/index.js';
import { connect, failureOf, outcome, type Session } from './harness.js';

const MARK = 'SANDSTREAM_MCP_TASK_TEST';
const BOUND = 20_000;

let session: Session;
beforeEach(async () => {
  session = await connect();
});
afterEach(async () => {
  await session.client.close();
});

/** Starts a task of `name` and returns its task as soon as the server created it, and the rest of its messages. */
async function startTask(name: string, args: Record<string, unknown>, meta?: Record<string, unknown>): Promise<{ task: Task; rest: AsyncGenerator<ResponseMessage<CallToolResult>, void, void> }> {
  const stream = session.client.experimental.tasks.callToolStream({ name, arguments: args, ...(meta !== undefined && { _meta: meta }) }, CallToolResultSchema, { task: { ttl: 60_000 } });
  const first = await stream.next();
  if (first.done !== true && first.value.type === 'error') throw first.value.error;
  if (first.done === true || first.value.type !== 'taskCreated') throw new Error(`no task created: ${JSON.stringify(first.value)}`);
  return { task: first.value.task, rest: stream as AsyncGenerator<ResponseMessage<CallToolResult>, void, void> };
}

/** The result a task's message stream ends with. */
async function resultOf(rest: AsyncGenerator<ResponseMessage<CallToolResult>, void, void>): Promise<CallToolResult> {
  for await (const message of rest) {
    if (message.type === 'result') return message.result;
    if (message.type === 'error') throw message.error;
  }
  throw new Error('the task ended with no result');
}

describe('exec and the session shell as MCP tasks', () => {
  it('declares tasks of tools/call, and exec and the shell as tools that may run as tasks; the background tools not', async () => {
    expect(session.client.getServerCapabilities()?.tasks).toMatchObject({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await session.client.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
    expect(support).toMatchObject({ sandbox_exec: 'optional', sandbox_shell: 'optional', sandbox_start: undefined, sandbox_read: undefined });
  });

  it('answers a task at once and gives the command result through tasks/result: its exact status and output', async () => {
    const { task, rest } = await startTask('sandbox_exec', { command: 'echo one; echo two >&2; exit 3' });
    expect(task.status).toBe('working');
    const result = outcome(await resultOf(rest));
    expect([result.exitCode, result.stdout, result.stderr]).toEqual([3, 'one\n', 'two\n']);
    expect((await session.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    const again = await session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(outcome(again).exitCode).toBe(3);
    expect((await session.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(task.taskId);
  });

  it("sends the command's lines as progress while the task runs, past the task's answer", async () => {
    const lines: string[] = [];
    const progressToken = `task-progress-${randomUUID()}`;
    // The harness routes progress by token; this token is the test's own.
    session.client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
      if (notification.params.progressToken === progressToken) lines.push(notification.params.message ?? '');
    });
    const { rest } = await startTask('sandbox_exec', { command: 'for i in 1 2 3; do echo "line $i"; done' }, { progressToken });
    const result = outcome(await resultOf(rest));
    expect(result.stdout).toBe('line 1\nline 2\nline 3\n');
    expect(lines).toEqual(['line 1\n', 'line 2\n', 'line 3\n']);
  });

  it('tasks/cancel ends the whole tree before it answers, and the task stays cancelled', async () => {
    const mark = randomUUID();
    const { task } = await startTask('sandbox_exec', { command: 'sleep 300 & sleep 301; wait', env: [`${MARK}=${mark}`] });
    await waitFor(() => markedProcesses(MARK, mark).length >= 3, BOUND, 'the shell and its two sleeps');
    const cancelled = await session.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe('cancelled');
    // Answered once the tree was gone: nothing of it is left at that moment.
    expect(markedProcesses(MARK, mark)).toEqual([]);
    expect((await session.client.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
    await expect(session.client.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/terminal status/);
  });

  it('a session shell task keeps cd and export for the next call, and its cancel ends its tree', async () => {
    const mark = randomUUID();
    const first = await startTask('sandbox_shell', { command: `cd /tmp && export ${MARK}=${mark}` });
    expect(outcome(await resultOf(first.rest)).exitCode).toBe(0);
    const { task } = await startTask('sandbox_shell', { command: 'pwd; sleep 300 & sleep 301; wait' });
    await waitFor(() => markedProcesses(MARK, mark).length >= 2, BOUND, 'the two sleeps of the shell call');
    await session.client.experimental.tasks.cancelTask(task.taskId);
    expect(markedProcesses(MARK, mark).filter((p) => p.cmdline.includes('sleep'))).toEqual([]);
    const after = outcome((await session.client.callTool({ name: 'sandbox_shell', arguments: { command: `pwd; echo "$${MARK}"` } })) as CallToolResult);
    expect(after.stdout).toBe(`/tmp\n${mark}\n`);
  });

  it('a task with bad arguments fails with the typed error; a background tool asked for a task is refused, naming the tools that can', async () => {
    const { task, rest } = await startTask('sandbox_exec', { argv: ['true'], command: 'true' });
    // The SDK's stream says only that the task failed; tasks/get and tasks/result say why.
    await expect(resultOf(rest)).rejects.toThrow(/failed/);
    const failed = await session.client.experimental.tasks.getTask(task.taskId);
    expect([failed.status, failed.statusMessage]).toEqual(['failed', 'INVALID_ARGUMENT: arguments: give exactly one of argv and command']);
    const result = await session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(failureOf(result)).toMatchObject({ code: 'INVALID_ARGUMENT', key: 'arguments', message: 'arguments: give exactly one of argv and command' });
    await expect(startTask('sandbox_list', {})).rejects.toThrow(/sandbox_list cannot run as a task: only sandbox_exec and sandbox_shell can/);
  });

  it('a client of the tasks extension (per-request capability, no task parameter) gets the plain result, never a task', async () => {
    const result = (await session.client.callTool({
      name: 'sandbox_exec',
      arguments: { argv: ['echo', 'plain'] },
      _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    })) as CallToolResult;
    expect('task' in result).toBe(false);
    expect(outcome(result).stdout).toBe('plain\n');
  });

  it(`runs at most ${MAX_RUNNING_TASKS} tasks at once: one more is refused, saying why; a plain call still runs`, async () => {
    const mark = randomUUID();
    const running = [];
    for (let i = 0; i < MAX_RUNNING_TASKS; i++) running.push(await startTask('sandbox_exec', { command: 'sleep 300', env: [`${MARK}=${mark}`] }));
    await expect(startTask('sandbox_exec', { argv: ['true'] })).rejects.toThrow(/tasks of this session are running: wait for one to end, or cancel one/);
    expect(outcome((await session.client.callTool({ name: 'sandbox_exec', arguments: { argv: ['echo', 'still'] } })) as CallToolResult).stdout).toBe('still\n');
    await session.client.experimental.tasks.cancelTask(running[0]!.task.taskId);
    const next = await startTask('sandbox_exec', { argv: ['echo', 'room again'] });
    expect(outcome(await resultOf(next.rest)).stdout).toBe('room again\n');
  });

  it('the end of the session ends a running task and its tree', async () => {
    const mark = randomUUID();
    await startTask('sandbox_exec', { command: 'sleep 300 & sleep 301; wait', env: [`${MARK}=${mark}`] });
    await waitFor(() => markedProcesses(MARK, mark).length >= 3, BOUND, 'the shell and its two sleeps');
    await session.client.close();
    await waitFor(() => markedProcesses(MARK, mark).length === 0, BOUND, "the task's tree after the session ended");
  });
});
