// The background tools' commands: each a Process the server holds for the
// session, its unread output kept up to a bound, read in pieces by id.
import { CommandNotFound, InvalidArgument, InvalidState, SandstreamError, type Process, type Sandbox, type Signal, type StreamName, type TerminalSize } from '@sandstream/types';
import type { Omitted } from './output.js';
import { TerminalText } from './terminal.js';

/** How long the output must stay quiet before a waiting `read` answers (milliseconds). */
export const READ_SETTLE_MS = 300;

/** Characters of recent output a waiting `read` matches its `until` pattern against, per stream. */
const MATCH_WINDOW = 64 * 1024;

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
  /** For a command started with `pty`: its terminal's size, as last set. */
  readonly terminal?: TerminalSize | undefined;
}

/**
 * What a `read` returns as `structuredContent`: the status, and what was
 * lost of the output since the last read. The output itself is in the
 * result's text content.
 */
export interface JobOutput extends JobStatus {
  /** Bytes of each stream dropped unread because more than the server's unread bound waited. */
  readonly dropped: { readonly stdout: number; readonly stderr: number };
  /** What the cut to the output budget left out of each stream. */
  readonly omitted: { readonly stdout: Omitted; readonly stderr: Omitted };
  /** With `until`: whether the pattern appeared in the output before the read answered. */
  readonly matched?: boolean | undefined;
}

/** The output a read took, before it is cut to the budget. */
export interface TakenOutput {
  readonly status: JobStatus;
  readonly stdout: string;
  readonly stderr: string;
  readonly dropped: JobOutput['dropped'];
  readonly matched: boolean | undefined;
}

/** How a background command starts. */
export interface JobOptions {
  readonly cwd?: string | undefined;
  readonly env?: Record<string, string> | undefined;
  /** Spec 1.5: on a terminal of this size. */
  readonly pty?: TerminalSize | undefined;
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

  /** The unread text, left unread. */
  peek(): string {
    return Buffer.concat(this.parts).toString('utf8');
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
  /** For a command on a terminal: its output as text, fed by every read, raw or not. */
  readonly text: TerminalText | undefined;
  status: JobStatus;
  /** Resolves the waiters of `read` with `waitMs` on new output or the end. */
  #wake: (() => void)[] = [];
  /** Waiters that look at each chunk as it comes (a `read` with `until`). */
  readonly #listeners = new Set<(stream: StreamName, data: Uint8Array) => void>();
  /** When the last output came (performance.now()). */
  #lastOutputAt = 0;
  readonly ended: Promise<void>;

  constructor(
    readonly id: string,
    readonly proc: Process,
    bound: number,
    terminal: TerminalSize | undefined,
  ) {
    this.unread = { stdout: new Unread(bound), stderr: new Unread(bound) };
    this.text = terminal === undefined ? undefined : new TerminalText();
    this.status = { id, argv: proc.argv, state: 'running', exitCode: null, signal: null, ...(terminal !== undefined && { terminal }) };
    this.ended = this.#pump();
  }

  async #pump(): Promise<void> {
    try {
      for await (const chunk of this.proc) {
        this.unread[chunk.stream].add(chunk.data);
        this.#lastOutputAt = performance.now();
        for (const listener of this.#listeners) listener(chunk.stream, chunk.data);
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

  /** Resolves on the next output, the end, or after `ms`. */
  #event(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Waits up to `ms`: for `until` to appear in the output (the unread one
   * and what comes), or without it, for the output to go quiet (some unread,
   * and nothing new for {@link READ_SETTLE_MS}); either way no longer than
   * the command runs. Returns whether `until` matched.
   */
  async settle(ms: number, until: RegExp | undefined): Promise<boolean | undefined> {
    const deadline = performance.now() + ms;
    let matched: boolean | undefined;
    let stop = (): void => {};
    if (until !== undefined) {
      const windows: Record<StreamName, string> = { stdout: '', stderr: '' };
      // On a terminal, the pattern is matched against the text a read returns, not the escape sequences.
      const terminal = this.text === undefined ? undefined : new TerminalText();
      const decoders = { stdout: new TextDecoder('utf-8', { ignoreBOM: true }), stderr: new TextDecoder('utf-8', { ignoreBOM: true }) };
      const see = (stream: StreamName, text: string): void => {
        if (terminal !== undefined && stream === 'stdout') {
          terminal.write(text);
          text = terminal.take();
        }
        windows[stream] = (windows[stream] + text).slice(-MATCH_WINDOW);
        if (until.test(windows[stream])) matched = true;
      };
      matched = false;
      see('stdout', this.unread.stdout.peek());
      see('stderr', this.unread.stderr.peek());
      const listener = (stream: StreamName, data: Uint8Array): void => see(stream, decoders[stream].decode(data, { stream: true }));
      this.#listeners.add(listener);
      stop = () => this.#listeners.delete(listener);
    }
    try {
      for (;;) {
        const now = performance.now();
        if (this.status.state !== 'running' || matched === true || now >= deadline) return matched;
        let next = deadline - now;
        if (until === undefined && this.unread.stdout.size + this.unread.stderr.size > 0) {
          const quiet = now - this.#lastOutputAt;
          if (quiet >= READ_SETTLE_MS) return matched;
          next = Math.min(next, READ_SETTLE_MS - quiet);
        }
        await this.#event(next);
      }
    } finally {
      stop();
    }
  }
}

/**
 * The longest a `read` may wait for output: 50 s, under the 60 s after which
 * the MCP SDK's client gives up on a request by default.
 */
export const MAX_READ_WAIT_MS = 50_000;

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
  async start(argv: readonly string[], options: JobOptions): Promise<JobStatus> {
    if (this.#closed) throw new InvalidState('the session has ended');
    const withStdin = this.sandbox.capabilities.stdin;
    const proc = this.sandbox.stream(argv, {
      ...(withStdin && { stdin: 'pipe' as const }),
      ...(options.cwd !== undefined && { cwd: options.cwd }),
      ...(options.env !== undefined && { env: options.env }),
      ...(options.pty !== undefined && { pty: options.pty }),
    });
    try {
      await proc.started();
    } catch (error) {
      await proc[Symbol.asyncDispose]().catch(() => undefined);
      throw error;
    }
    const job = new Job(`job-${++this.#next}`, proc, this.bound, options.pty);
    this.#jobs.set(job.id, job);
    return job.status;
  }

  #job(id: string): Job {
    const job = this.#jobs.get(id);
    if (job === undefined) throw new CommandNotFound(id);
    return job;
  }

  /**
   * What the command wrote since the last read, and its status; waits up to
   * `waitMs` for the output to go quiet, or for `until` to appear (see
   * `Job.settle`). On a terminal, `stdout` is the output as text, or as it
   * came with `raw`.
   */
  async read(id: string, options: { readonly waitMs?: number | undefined; readonly until?: RegExp | undefined; readonly raw?: boolean | undefined } = {}): Promise<TakenOutput> {
    const job = this.#job(id);
    const raw = options.raw ?? false;
    if (raw && job.text === undefined) throw new InvalidArgument('arguments.raw', `is for a command on a terminal, and ${id} was started without pty`);
    const matched = await job.settle(Math.min(options.waitMs ?? 0, MAX_READ_WAIT_MS), options.until);
    const ended = job.status.state !== 'running';
    const stdout = job.unread.stdout.take(ended);
    const stderr = job.unread.stderr.take(ended);
    let text = stdout.text;
    if (job.text !== undefined) {
      job.text.write(stdout.text);
      const asText = job.text.take();
      if (!raw) text = asText;
    }
    return { status: job.status, stdout: text, stderr: stderr.text, dropped: { stdout: stdout.dropped, stderr: stderr.dropped }, matched };
  }

  /** Sets the terminal size of a command started with `pty`. */
  async resize(id: string, size: TerminalSize): Promise<JobStatus> {
    const job = this.#job(id);
    if (job.status.terminal === undefined || job.proc.resize === undefined) throw new InvalidState(`${id} was started without pty: it has no terminal to resize`);
    await job.proc.resize(size.cols, size.rows);
    job.status = { ...job.status, terminal: { cols: size.cols, rows: size.rows } };
    return job.status;
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
