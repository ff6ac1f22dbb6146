// The background tools' commands: each a Process the server holds for the
// session, its unread output kept up to a bound, read in pieces by id.
import { CommandNotFound, InvalidArgument, InvalidState, SandstreamError, type Process, type Sandbox, type Signal, type StreamName } from '@sandstream/types';

/** A command started by the `start` tool, as `list` and `read` describe it. */
export interface JobStatus {
  /** The id the other tools take. */
  readonly id: string;
  readonly argv: readonly string[];
  /** `running` until the end is known; `failed` when the sandbox could not say how it ended. */
  readonly state: 'running' | 'exited' | 'failed';
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** For `failed`: the error's code and message. */
  readonly error?: { readonly code: string; readonly message: string } | undefined;
}

/** What a `read` returns: the output since the last read, and the status. */
export interface JobOutput extends JobStatus {
  readonly stdout: string;
  readonly stderr: string;
  /** Bytes of each stream dropped unread because more than the bound waited. */
  readonly dropped: { readonly stdout: number; readonly stderr: number };
}

/** Unread bytes of one stream, the oldest dropped past the bound. */
class Unread {
  parts: Uint8Array[] = [];
  size = 0;
  dropped = 0;
  readonly #decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  constructor(private readonly bound: number) {}

  add(data: Uint8Array): void {
    this.parts.push(data);
    this.size += data.byteLength;
    while (this.size > this.bound) {
      const first = this.parts[0]!;
      const over = this.size - this.bound;
      if (first.byteLength <= over) {
        this.parts.shift();
        this.size -= first.byteLength;
        this.dropped += first.byteLength;
      } else {
        this.parts[0] = first.subarray(over);
        this.size -= over;
        this.dropped += over;
      }
    }
  }

  /** The unread text; a character split across reads is decoded whole on the next one. */
  take(ended: boolean): { text: string; dropped: number } {
    const text = this.#decoder.decode(Buffer.concat(this.parts), { stream: !ended });
    const dropped = this.dropped;
    this.parts = [];
    this.size = 0;
    this.dropped = 0;
    return { text, dropped };
  }
}

/** One command of the background tools. */
class Job {
  readonly unread: Record<StreamName, Unread>;
  status: JobStatus;
  /** Resolves the waiters of `read` with `waitMs` on new output or the end. */
  #wake: (() => void)[] = [];
  readonly ended: Promise<void>;

  constructor(
    readonly id: string,
    readonly proc: Process,
    bound: number,
  ) {
    this.unread = { stdout: new Unread(bound), stderr: new Unread(bound) };
    this.status = { id, argv: proc.argv, state: 'running', exitCode: null, signal: null };
    this.ended = this.#pump();
  }

  async #pump(): Promise<void> {
    try {
      for await (const chunk of this.proc) {
        this.unread[chunk.stream].add(chunk.data);
        this.#notify();
      }
      const result = await this.proc.wait();
      this.status = { ...this.status, state: 'exited', exitCode: result.exitCode, signal: result.signal };
    } catch (error) {
      const code = error instanceof SandstreamError ? error.code : 'INTERNAL';
      this.status = { ...this.status, state: 'failed', error: { code, message: error instanceof Error ? error.message : String(error) } };
    }
    this.#notify();
  }

  #notify(): void {
    const waiters = this.#wake;
    this.#wake = [];
    for (const wake of waiters) wake();
  }

  /** Resolves on new output, the end, or after `ms`. */
  changed(ms: number): Promise<void> {
    if (this.status.state !== 'running' || this.unread.stdout.size + this.unread.stderr.size > 0 || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** The longest a `read` may wait for output (milliseconds). */
export const MAX_READ_WAIT_MS = 60_000;

/**
 * The background commands of one MCP session. They end when the session
 * ends ({@link Jobs.endAll}): the Processes are the server's, so nothing
 * they started outlives it, on any adapter.
 */
export class Jobs {
  readonly #jobs = new Map<string, Job>();
  #next = 0;
  #closed = false;

  constructor(
    private readonly sandbox: Sandbox,
    /** Unread bytes kept per stream per command. */
    private readonly bound: number,
  ) {}

  /** Starts a command; resolves with its id once the sandbox confirmed the start. */
  async start(argv: readonly string[], options: { cwd?: string | undefined; env?: Record<string, string> | undefined }): Promise<JobStatus> {
    if (this.#closed) throw new InvalidState('the session has ended');
    const withStdin = this.sandbox.capabilities.stdin;
    const proc = this.sandbox.stream(argv, {
      ...(withStdin && { stdin: 'pipe' as const }),
      ...(options.cwd !== undefined && { cwd: options.cwd }),
      ...(options.env !== undefined && { env: options.env }),
    });
    try {
      await proc.started();
    } catch (error) {
      await proc[Symbol.asyncDispose]().catch(() => undefined);
      throw error;
    }
    const job = new Job(`job-${++this.#next}`, proc, this.bound);
    this.#jobs.set(job.id, job);
    return job.status;
  }

  #job(id: string): Job {
    const job = this.#jobs.get(id);
    if (job === undefined) throw new CommandNotFound(id);
    return job;
  }

  /** What the command wrote since the last read, and its status; waits up to `waitMs` for something new. */
  async read(id: string, waitMs = 0): Promise<JobOutput> {
    const job = this.#job(id);
    await job.changed(Math.min(waitMs, MAX_READ_WAIT_MS));
    const ended = job.status.state !== 'running';
    const stdout = job.unread.stdout.take(ended);
    const stderr = job.unread.stderr.take(ended);
    return { ...job.status, stdout: stdout.text, stderr: stderr.text, dropped: { stdout: stdout.dropped, stderr: stderr.dropped } };
  }

  /** Writes text to the command's standard input; `end` closes it after. */
  async write(id: string, text: string, end: boolean): Promise<JobStatus> {
    const job = this.#job(id);
    const stdin = job.proc.stdin;
    if (stdin === null) throw new InvalidArgument('arguments.id', `the sandbox ${this.sandbox.name} has no stdin capability: ${id} has no standard input`);
    if (text !== '') await stdin.write(text);
    if (end) await stdin.end();
    return job.status;
  }

  /**
   * Without a signal: terminates the command's whole tree (SIGTERM, SIGKILL
   * after the grace period) and waits for its end. With one: sends it.
   * Either way the command stays listed, so its last output can be read.
   */
  async kill(id: string, signal: Signal | undefined): Promise<JobStatus> {
    const job = this.#job(id);
    if (signal !== undefined) await job.proc.kill(signal);
    else {
      await job.proc[Symbol.asyncDispose]();
      await job.ended;
    }
    return job.status;
  }

  list(): JobStatus[] {
    return [...this.#jobs.values()].map((job) => job.status);
  }

  /** The session ended: every command's tree is terminated. */
  async endAll(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#jobs.values()].map((job) => job.proc[Symbol.asyncDispose]()));
  }
}
