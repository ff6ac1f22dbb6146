import { spawn, type ChildProcess } from 'node:child_process';
import { SpawnFailed, StdinClosed, type Signal } from '@sandstream/types';
import type { CommandSpec, DriverEvents, ExitStatus, ProcessDriver, StartedProcess } from '@sandstream/types/runtime';
import { limitArgs } from './limits.js';
import type { UserIds } from './users.js';

/** What the local driver needs besides the command. */
export interface ChildDriverOptions {
  readonly baseEnv: Readonly<Record<string, string>>;
  readonly defaultCwd: string | undefined;
  /** Used when the leader exits while others in its group linger. */
  readonly graceMs: number;
  readonly prlimitPath: string | undefined;
  /** Resolved from `command.user` when the driver was created. */
  readonly user: UserIds | undefined;
}

const STDIN_CLOSED_CODES = new Set(['EPIPE', 'ECONNRESET', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END']);

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    // A negative pid addresses the whole process group the command leads.
    process.kill(-pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/**
 * Runs one command as a child process that leads its own process group, so
 * signals reach everything it starts. The command is finished when its
 * leader was reaped and both pipes reached end-of-file; a lingering group
 * member holding a pipe is told to go (SIGTERM, then SIGKILL after grace)
 * so that it cannot keep the result waiting.
 */
export class ChildDriver implements ProcessDriver {
  private child: ChildProcess | undefined;
  private leaderStatus: ExitStatus | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly command: CommandSpec,
    private readonly options: ChildDriverOptions,
  ) {}

  start(events: DriverEvents): Promise<StartedProcess> {
    const { command, options } = this;
    const user = options.user;
    const wrapper = command.limits === undefined ? [] : limitArgs(options.prlimitPath!, command.limits);
    const [file, ...args] = [...wrapper, ...command.argv];
    let child: ChildProcess;
    try {
      child = spawn(file!, args, {
        cwd: command.cwd ?? options.defaultCwd,
        env: { ...options.baseEnv, ...command.env },
        stdio: [command.stdin, 'pipe', 'pipe'],
        detached: true,
        ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }),
      });
    } catch (error) {
      return Promise.reject(new SpawnFailed(command.argv, (error as Error).message, { cause: error }));
    }
    this.child = child;
    const stdout = child.stdout!;
    const stderr = child.stderr!;
    stdout.on('data', (data: Buffer) => events.output('stdout', data));
    stderr.on('data', (data: Buffer) => events.output('stderr', data));
    child.stdin?.on('error', () => {
      // Surfaced through the write callbacks; a listener must exist so a
      // reader that went away never becomes an uncaught EPIPE.
    });

    return new Promise<StartedProcess>((resolve, reject) => {
      child.once('spawn', () => {
        resolve({ pid: child.pid! });
      });
      child.on('error', (error: NodeJS.ErrnoException) => {
        if (child.pid === undefined) {
          reject(new SpawnFailed(command.argv, error.code ?? error.message, { cause: error }));
        }
      });
      child.once('exit', (code, signal) => {
        this.leaderStatus = { exitCode: code, signal };
        // Anything still in the group outlived the command: tell it to go.
        this.lingerTimer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), options.graceMs);
        signalGroup(child.pid!, 'SIGTERM');
      });
      child.once('close', () => {
        clearTimeout(this.lingerTimer);
        if (this.leaderStatus !== undefined) events.exit(this.leaderStatus);
      });
    });
  }

  writeStdin(data: Uint8Array): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded) {
      return Promise.reject(new StdinClosed('standard input is closed'));
    }
    return new Promise((resolve, reject) => {
      stdin.write(data, (error) => {
        if (!error) return resolve();
        const code = (error as NodeJS.ErrnoException).code ?? '';
        reject(
          STDIN_CLOSED_CODES.has(code)
            ? new StdinClosed(`the command stopped reading standard input (${code})`, { cause: error })
            : error,
        );
      });
    });
  }

  closeStdin(): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded) return Promise.resolve();
    return new Promise((resolve) => stdin.end(() => resolve()));
  }

  async signal(signal: Signal): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    signalGroup(pid, signal);
  }

  pause(): void {
    this.child?.stdout?.pause();
    this.child?.stderr?.pause();
  }

  resume(): void {
    this.child?.stdout?.resume();
    this.child?.stderr?.resume();
  }

  async release(): Promise<void> {
    clearTimeout(this.lingerTimer);
    const child = this.child;
    if (!child) return;
    child.stdin?.destroy();
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
}
