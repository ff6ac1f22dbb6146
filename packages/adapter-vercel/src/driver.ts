import { randomUUID } from 'node:crypto';
import { constants } from 'node:os';
import { SpawnFailed, StdinClosed, TransportError, type Signal } from '@sandstream/types';
import type { CommandSpec, DriverEvents, ExitStatus, ProcessDriver, StartedProcess } from '@sandstream/types/runtime';
import type { Answer, StartBody, VercelApi } from './api.js';
import { describeError, httpStatusOf, isFinalStreamError } from './errors.js';
import { LogPump } from './log-pump.js';
import { StdinWriter } from './stdin.js';
import { parseMembers, TAG_VARIABLE, treeHelper } from './tree.js';

/** What every driver of one sandbox shares. */
export interface DriverContext {
  readonly api: VercelApi;
  /** The service answered the stdin probe: every command has a stdin pipe. */
  readonly stdinService: boolean;
  /** Sent as the API's command `timeout`: a server-side backstop (undefined: none). */
  readonly commandTimeoutMs: number | undefined;
  /** Merged under each command's own `env`. */
  readonly baseEnv: Readonly<Record<string, string>>;
}

/** First and last interval of the poll that waits for a tree to empty. */
const POLL_FIRST_MS = 20;
const POLL_MAX_MS = 500;
/**
 * How long a SIGKILL sweep that keeps failing is repeated (after a start
 * whose outcome is unknown, or a release after a failure): the SDK's own
 * retries of one helper give up within a couple of seconds.
 */
const SWEEP_PERSIST_MS = 10_000;
/** Failed waits for the exit in a row before the link counts as broken. */
const MAX_WAIT_FAILURES = 5;

const SIGNAL_NAMES = new Map<number, string>(
  Object.entries(constants.signals as Record<string, number>).map(([name, number]) => [number, name]),
);

/**
 * The API reports one number: an exit code, or 128 + the signal number when
 * a signal ended the command (the shell's convention). A status of 129-192
 * that names a known signal is read as that signal (ADR-0027).
 */
export function decodeStatus(code: number): ExitStatus {
  if (code > 128 && code <= 128 + 64) {
    const name = SIGNAL_NAMES.get(code - 128);
    if (name !== undefined) return { exitCode: null, signal: name };
  }
  return { exitCode: code, signal: null };
}

function commandIdOf(answer: Answer): string | undefined {
  const json = answer.json as { command?: { id?: unknown } } | undefined;
  const id = json?.command?.id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

function messageOf(answer: Answer): string {
  const json = answer.json as { error?: { message?: unknown; code?: unknown } } | undefined;
  const message = json?.error?.message;
  return typeof message === 'string' ? message : answer.text.slice(0, 200) || `HTTP ${answer.status}`;
}

/**
 * One command on a Vercel sandbox. It starts detached (the answer carries
 * the command id, the early id), reads the one log stream with a
 * {@link LogPump}, learns the exit from a waiting read, and confirms that
 * nothing of the command's tree is alive before it reports the end. Its
 * tree is found by a unique tag in the command's environment, so signals
 * reach everything it started, unlike the API's kill, which reaches only
 * the command's own process.
 */
export class VercelDriver implements ProcessDriver {
  private events: DriverEvents | undefined;
  private cmdId: string | undefined;
  private readonly tag = randomUUID();
  private readonly controller = new AbortController();
  private pump: LogPump | undefined;
  private stdin: StdinWriter | undefined;
  private logsEnded = false;
  private leader: ExitStatus | undefined;
  private leaderReported = false;
  private finished = false;
  private released = false;
  private checking = false;
  /** The leader exited and a look found nothing of the tree alive: nothing can come back. */
  private treeEmpty = false;
  private recheck = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private pollDelay = POLL_FIRST_MS;

  constructor(
    private readonly context: DriverContext,
    private readonly command: CommandSpec,
  ) {}

  /** The tag every process of this command carries (`SANDSTREAM_COMMAND=<tag>`). */
  get treeTag(): string {
    return this.tag;
  }

  async start(events: DriverEvents): Promise<StartedProcess> {
    this.events = events;
    const { command, context } = this;
    const body: StartBody = {
      command: command.argv[0]!,
      args: command.argv.slice(1),
      ...(command.cwd === undefined ? {} : { cwd: command.cwd }),
      env: { ...context.baseEnv, ...command.env, [TAG_VARIABLE]: this.tag },
      sudo: false,
      ...(context.commandTimeoutMs === undefined ? {} : { timeout: context.commandTimeoutMs }),
    };
    let answer: Answer;
    try {
      // Not aborted by release(): a start cut off mid-flight could still run
      // on the service after the sweep below; its answer is awaited instead.
      answer = await context.api.start(body);
    } catch (error) {
      await this.sweep();
      throw new TransportError(
        `starting the command got no answer (${describeError(error)}); whether it started is unknown, so it was not retried, and whatever it started is being killed`,
        { cause: error },
      );
    }
    const cmdId = answer.status === 200 ? commandIdOf(answer) : undefined;
    if (cmdId === undefined) {
      if (answer.status === 400 || answer.status === 404 || answer.status === 422) {
        throw new SpawnFailed(command.argv, messageOf(answer));
      }
      if (answer.status === 410) throw new TransportError('the sandbox is stopped; the command was not started');
      if (answer.status === 401 || answer.status === 403) {
        throw new TransportError(`the service refused the credentials (HTTP ${answer.status}): ${messageOf(answer)}`);
      }
      await this.sweep();
      throw new TransportError(
        `starting the command: HTTP ${answer.status} (${messageOf(answer)}); whether it started is unknown, so it was not retried, and whatever it started is being killed`,
      );
    }
    this.cmdId = cmdId;
    if (this.released) {
      // The runtime gave up on this start meanwhile: end what it started.
      await this.sweep();
      throw new TransportError('the start was abandoned');
    }
    const pump = new LogPump({
      open: (signal) => context.api.logs(cmdId, signal),
      deliver: (stream, data) => {
        if (!this.finished) events.output(stream, data);
      },
      resumable: (error) => !isFinalStreamError(error),
      // A clean end before the exit is known may be a cut (a proxy closing
      // the response at a record boundary): the command still running says so.
      endedEarly: async () => {
        if (this.leader !== undefined) return false;
        try {
          return (await context.api.status(cmdId, this.controller.signal)).exitCode === null;
        } catch {
          return false;
        }
      },
    });
    this.pump = pump;
    pump.run().then(
      (outcome) => {
        if (outcome !== 'ended') return;
        this.logsEnded = true;
        this.progress();
      },
      (error: unknown) =>
        this.failWith(new TransportError(`the log stream failed: ${describeError(error)}`, { cause: error })),
    );
    void this.waitForExit(cmdId);
    if (context.stdinService) {
      // Without a writer or input, the command reads end-of-file (SS-STDIN-4):
      // its pipe is closed at once, in one request.
      this.stdin = new StdinWriter(context.api, cmdId, this.controller.signal, command.stdin === 'ignore');
      if (command.stdin === 'ignore') void this.stdin.close().catch(() => undefined);
    }
    const started: StartedProcess = { commandId: cmdId };
    return started;
  }

  private async waitForExit(cmdId: string): Promise<void> {
    let failures = 0;
    while (!this.released && !this.finished) {
      try {
        const finished = await this.context.api.wait(cmdId, this.controller.signal);
        if (finished.exitCode === null) continue;
        this.leader = decodeStatus(finished.exitCode);
        this.progress();
        return;
      } catch (error) {
        if (this.released || this.finished) return;
        const status = httpStatusOf(error);
        if (status === 410) {
          return this.failWith(new TransportError('the sandbox was stopped while the command ran', { cause: error }));
        }
        if (status !== undefined && status >= 400 && status < 500 && status !== 429) {
          return this.failWith(new TransportError(`waiting for the exit: HTTP ${status}`, { cause: error }));
        }
        if (++failures > MAX_WAIT_FAILURES) {
          return this.failWith(
            new TransportError(`waiting for the exit failed ${failures} times: ${describeError(error)}`, { cause: error }),
          );
        }
        await new Promise((r) => setTimeout(r, Math.min(1_000, 50 * 2 ** failures)));
      }
    }
  }

  /** Live members of the command's tree, asked inside the sandbox. */
  private async members(): Promise<Array<{ pid: number; state: string }>> {
    const { stdout } = await this.context.api.helper(treeHelper(this.tag, '-'));
    return parseMembers(stdout);
  }

  /**
   * Once the leader's status is known: end when nothing of the tree is
   * alive and the log stream ended; otherwise report the leader's exit (the
   * runtime then winds the tree down through {@link signal}) and poll.
   */
  private progress(): void {
    if (this.finished || this.released || this.leader === undefined) return;
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = true;
    clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    void this.check().finally(() => {
      this.checking = false;
      if (this.recheck) {
        this.recheck = false;
        this.progress();
      }
    });
  }

  private async check(): Promise<void> {
    let alive: Array<{ pid: number; state: string }>;
    try {
      alive = await this.members();
    } catch (error) {
      if (this.finished || this.released) return;
      if (httpStatusOf(error) === 410) {
        return this.failWith(new TransportError('the sandbox was stopped while the command ran', { cause: error }));
      }
      // A failed look is no proof of anything: look again later.
      this.reportLeader();
      this.schedule();
      return;
    }
    if (this.finished || this.released) return;
    if (alive.length === 0) this.treeEmpty = true;
    if (alive.length === 0 && this.logsEnded) {
      this.finished = true;
      clearTimeout(this.pollTimer);
      this.events!.exit(this.leader!);
      return;
    }
    this.reportLeader();
    // With members alive, poll; with none but output still arriving, the
    // end of the log stream calls again.
    if (alive.length > 0) this.schedule();
  }

  private reportLeader(): void {
    if (this.leaderReported) return;
    this.leaderReported = true;
    this.events!.leaderExited(this.leader!);
  }

  private schedule(): void {
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => this.progress(), this.pollDelay);
    this.pollDelay = Math.min(this.pollDelay * 2, POLL_MAX_MS);
  }

  private failWith(error: Error): void {
    if (this.finished || this.released) return;
    this.finished = true;
    clearTimeout(this.pollTimer);
    this.pump?.stop();
    this.events!.fail(error);
  }

  /**
   * SIGKILL to whatever carries this command's tag: after a start whose
   * outcome is unknown, a copy that did start is found and ended, never left
   * running unnoticed. Repeated while it fails, for up to
   * {@link SWEEP_PERSIST_MS}; never throws.
   */
  private async sweep(): Promise<void> {
    // The link that just failed may fail again: nothing else will end a
    // copy nobody knows of, so a failed sweep is repeated for a while.
    const deadline = performance.now() + SWEEP_PERSIST_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.context.api.helper(treeHelper(this.tag, 'KILL'));
        return;
      } catch (error) {
        // A stopped sandbox ended everything in it.
        if (httpStatusOf(error) === 410) return;
        const left = deadline - performance.now();
        if (left <= 0) return;
        await new Promise((r) => setTimeout(r, Math.min(left, 100 * 2 ** attempt, 1_000)));
      }
    }
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    if (this.stdin === undefined) throw new StdinClosed('this command has no standard input');
    try {
      await this.stdin.write(data);
    } catch (error) {
      if (error instanceof StdinClosed || error instanceof TransportError) throw error;
      throw new TransportError(`writing standard input: ${describeError(error)}`, { cause: error });
    }
  }

  async closeStdin(): Promise<void> {
    if (this.stdin === undefined) return;
    try {
      await this.stdin.close();
    } catch (error) {
      if (error instanceof TransportError) throw error;
      throw new TransportError(`closing standard input: ${describeError(error)}`, { cause: error });
    }
  }

  async signal(signal: Signal): Promise<void> {
    if (this.finished || this.released || this.cmdId === undefined) return;
    // An empty tree after the leader's exit stays empty: no member is left to start one.
    if (this.treeEmpty) return;
    try {
      await this.context.api.helper(treeHelper(this.tag, signal.replace(/^SIG/, '')));
    } catch (error) {
      if (httpStatusOf(error) === 410) return; // the sandbox is stopped: nothing of it lives
      throw new TransportError(`sending ${signal}: ${describeError(error)}`, { cause: error });
    }
    if (this.leader !== undefined) {
      this.pollDelay = POLL_FIRST_MS;
      this.progress();
    }
  }

  pause(): void {
    this.pump?.pause();
  }

  resume(): void {
    this.pump?.resume();
  }

  async release(): Promise<void> {
    if (this.released) return;
    const exited = this.finished && this.leader !== undefined && this.logsEnded;
    this.released = true;
    clearTimeout(this.pollTimer);
    this.controller.abort();
    this.pump?.stop();
    // After a failure or an abandoned start, end whatever may still run.
    if (!exited && this.cmdId !== undefined) await this.sweep();
  }
}
