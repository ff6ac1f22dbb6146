// MCP tasks (the 2025-11-25 revision, as @modelcontextprotocol/sdk implements
// them; ADR-0056): a `tools/call` of exec or the session shell that carries
// `task` answers at once with a task, which the client polls (`tasks/get`),
// reads (`tasks/result`) and cancels (`tasks/cancel`). The command runs under
// the same contract as a plain call: its own time limit, its exact status, and
// its whole tree ended when the task is cancelled or the session ends.
import { InMemoryTaskStore, type CreateTaskOptions, type TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { RequestTaskStore } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ErrorCode, McpError, type CallToolResult, type Request, type RequestId, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';

/** How long a task and its result are kept when the client asks for no `ttl`: 10 minutes. */
export const DEFAULT_TASK_TTL_MS = 10 * 60_000;
/** The longest a task and its result are kept, whatever the client asks: 1 hour. */
export const MAX_TASK_TTL_MS = 60 * 60_000;
/** How often the server suggests the client polls a task, in milliseconds. */
export const TASK_POLL_INTERVAL_MS = 500;
/** The most tasks of one session running at once; a task past it is refused with a JSON-RPC error. */
export const MAX_RUNNING_TASKS = 16;

/** The server's `tasks` capability: tasks of `tools/call`, listed and cancelled. */
export const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } } as const;

/** A task's command under way: its abort, and the promise that settles once its tree is gone and its result stored. */
interface Work {
  readonly controller: AbortController;
  readonly done: Promise<void>;
}

/**
 * The task store of one MCP session: the SDK's in-memory store, whose
 * `cancelled` transition (the SDK's `tasks/cancel` handler makes it) also
 * aborts the task's command and waits until its tree has ended, so the
 * client's `tasks/cancel` answers only then.
 */
export class SessionTasks implements TaskStore {
  readonly #store = new InMemoryTaskStore();
  readonly #work = new Map<string, Work>();
  #ended = false;

  createTask(taskParams: CreateTaskOptions, requestId: RequestId, request: Request, sessionId?: string): Promise<Task> {
    if (this.#ended) return Promise.reject(new Error('the session has ended'));
    return this.#store.createTask(taskParams, requestId, request, sessionId);
  }

  getTask(taskId: string, sessionId?: string): Promise<Task | null> {
    return this.#store.getTask(taskId, sessionId);
  }

  storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result, sessionId?: string): Promise<void> {
    return this.#store.storeTaskResult(taskId, status, result, sessionId);
  }

  getTaskResult(taskId: string, sessionId?: string): Promise<Result> {
    return this.#store.getTaskResult(taskId, sessionId);
  }

  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string, sessionId?: string): Promise<void> {
    await this.#store.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status !== 'cancelled') return;
    const work = this.#work.get(taskId);
    if (work === undefined) return;
    work.controller.abort(new Error(`task ${taskId} was cancelled by the client`));
    await work.done;
  }

  listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    return this.#store.listTasks(cursor, sessionId);
  }

  /**
   * Creates a task for one call and runs `run` in the background with an
   * abort of its own (the request's is retired with the answer): its result
   * is stored as `completed`, or `failed` when it is a tool error (with the
   * error's text as the task's `statusMessage`), unless the task was
   * cancelled meanwhile.
   */
  async start(store: RequestTaskStore, requestedTtl: number | undefined, run: (signal: AbortSignal) => Promise<CallToolResult>): Promise<{ task: Task }> {
    if (this.#work.size >= MAX_RUNNING_TASKS) {
      throw new McpError(ErrorCode.InvalidRequest, `${MAX_RUNNING_TASKS} tasks of this session are running: wait for one to end, or cancel one (tasks/cancel), before starting another`);
    }
    const ttl = Math.min(requestedTtl ?? DEFAULT_TASK_TTL_MS, MAX_TASK_TTL_MS);
    const task = await store.createTask({ ttl, pollInterval: TASK_POLL_INTERVAL_MS });
    const controller = new AbortController();
    const done = (async () => {
      const result = await run(controller.signal);
      const now = await this.#store.getTask(task.taskId);
      // Cancelled (or expired) meanwhile: the cancellation is the task's end.
      if (now === null || now.status === 'cancelled') return;
      if (result.isError === true) {
        // The spec's diagnostic for a failed task: what the tool error says (the status stays working until the result is stored).
        const block = result.content[0];
        await this.#store.updateTaskStatus(task.taskId, 'working', block?.type === 'text' ? block.text : 'the tool call failed');
      }
      await store.storeTaskResult(task.taskId, result.isError === true ? 'failed' : 'completed', result);
    })()
      // The session may be gone: nobody is left to tell.
      .catch(() => undefined)
      .finally(() => this.#work.delete(task.taskId));
    this.#work.set(task.taskId, { controller, done });
    return { task };
  }

  /** Ends the session's tasks: each command's tree is terminated, then the store lets go of every task. Idempotent. */
  async endAll(): Promise<void> {
    this.#ended = true;
    const running = [...this.#work.values()];
    for (const work of running) work.controller.abort(new Error('the session ended'));
    await Promise.all(running.map((work) => work.done));
    this.#store.cleanup();
  }
}
