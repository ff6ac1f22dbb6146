import { spawn, type ChildProcess } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { SpawnFailed, StdinClosed, type Signal } from '@sandstream/types';
import { type CommandSpec, type DriverEvents, type ExitStatus, type ProcessDriver, type StartedProcess } from '@sandstream/types/runtime';
import { CommandPipes } from '../pipes.js';
import type { UserIds } from '../users.js';
import { closeOrphanedPipes, spawnMark } from '../exhaustion.js';
import { GuardedGroup } from '../guardian.js';
import { hostStat, readFirstChild } from './environment.js';
import type { EnvironmentHandle } from './handle.js';
import type { IsolationSupport } from './probe.js';
import { ENTRY_ENV } from './entry-env.js';
import { entryCommand, entryFailure, entryRefusal, spawnError } from './entry-command.js';
import { SandboxTerminal, type IsolatedTerminalTools } from './terminal.js';

/** What the isolated driver needs besides the command. */
export interface IsolatedDriverOptions {
  /** Keeps the environment from being collected as abandoned while this command may run. */
  readonly anchor: object;
  readonly environment: EnvironmentHandle;
  readonly support: IsolationSupport;
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Absolute path inside the sandbox. */
  readonly defaultCwd: string;
  readonly prlimitPath: string | undefined;
  readonly user: UserIds | undefined;
  /**
   * For an environment this process joined: the grace period with which its guardian ends the group
   * should this process die first. (An environment's own init does that for the process that made it.)
   */
  readonly ownerLossGraceMs?: number | undefined;
  /** What a command with `pty` needs (terminal.ts); undefined where the sandbox declares no `pty`. */
  readonly terminalTools?: IsolatedTerminalTools | undefined;
}

const POLL_FIRST_MS = 1;
const POLL_MAX_MS = 50;

function signalQuietly(pid: number, signal: NodeJS.Signals | 0): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

/**
 * Runs one command inside a sandbox's namespaces. The process chain is
 * `nsenter` (on the host: it enters the namespaces, forks, and passes the
 * command's exit status or death signal on as its own) → `setsid` (the
 * command leads a new process group of its own, without `nsenter` in it) →
 * a short `sh` handshake (checks the program and working directory inside
 * the sandbox, reports its pid, waits for the go) → `prlimit` when limits
 * are asked → `setpriv`, which drops every capability, sets no_new_privs
 * and switches the account when `user` is asked → the command.
 *
 * Signals go to the command's process group by its host id, exactly as in
 * the plain mode; `nsenter` is not in that group, so it neither dies of a
 * SIGTERM the command handles nor reports a signal the command survived.
 * The exit is reported once `nsenter` has passed the status on, both pipes
 * are closed, and the sandbox's /proc shows no live process in the group.
 *
 * With `pty` the entry execs `script`, whose terminal is in the sandbox's
 * devpts and whose output is the terminal's (terminal.ts): the status is
 * read from the command's zombie, and the tree is the terminal's session.
 */
export class IsolatedDriver implements ProcessDriver {
  private child: ChildProcess | undefined;
  private pipes: CommandPipes | undefined;
  private events: DriverEvents | undefined;
  /** The command's leader: host pid (its process group) and pid inside the sandbox. */
  private hostLeader: number | undefined;
  private sandboxLeader: number | undefined;
  private leaderStatus: ExitStatus | undefined;
  private leaderReported = false;
  private pipesClosed = false;
  private killed = false;
  private groupGone = false;
  private finished = false;
  private paused = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private pollDelay = POLL_FIRST_MS;
  private watchTimer: NodeJS.Timeout | undefined;
  /** The group as registered with this process's guardian, by its host number. */
  private guarded: GuardedGroup | undefined;
  /** The command's end of its standard input, as /proc names it (`pipe:[…]`, `socket:[…]`). */
  private stdinLink: string | undefined;
  /** Under `pty`: the terminal in the sandbox, whose session is the tree (terminal.ts). */
  private terminal: SandboxTerminal | undefined;
  /** Under `pty`: the runtime typed end-of-file, and takes no more input. */
  private inputEnded = false;

  constructor(
    private readonly command: CommandSpec,
    private readonly options: IsolatedDriverOptions,
  ) {}

  async start(events: DriverEvents): Promise<StartedProcess> {
    const { command, options } = this;
    this.events = events;
    const { environment } = options;
    try {
      // Entered once the init has pivoted; the entry waits for its go until the environment is ready.
      await environment.enterable;
    } catch (error) {
      throw new SpawnFailed(command.argv, (error as Error).message, { cause: error });
    }
    const init = environment.initPid;
    if (init === undefined) {
      throw new SpawnFailed(command.argv, environment.gone?.message ?? "the sandbox's environment has ended");
    }
    const { cwd, args, variables } = entryCommand(command, options, init);
    const pty = command.pty;
    const { support } = options;
    let child: ChildProcess;
    const mark = spawnMark();
    try {
      child = spawn(support.nsenter, args, {
        cwd: '/',
        // Not the command's own: their carriers, set under their names as it execs (entry-env.ts).
        env: { ...ENTRY_ENV, ...variables },
        // Under a terminal, standard input is script's: the terminal's input.
        stdio: [pty === undefined ? command.stdin : 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (error) {
      throw new SpawnFailed(command.argv, spawnError(error as NodeJS.ErrnoException), { cause: error });
    }
    this.child = child;
    // Listened to at once: a spawn that failed (EMFILE, EAGAIN) emits 'error'
    // on the next tick, and with no listener that would end this process.
    const failed = new Promise<NodeJS.ErrnoException>((resolve) => child.on('error', resolve));
    const report = child.stdio?.[3] as Readable | undefined;
    const go = child.stdio?.[4] as Writable | undefined;
    if (!report || !go || !child.stdout || !child.stderr) {
      // Out of descriptors (EMFILE, ENFILE): Node.js gave the child no pipes, and only 'error' follows.
      closeOrphanedPipes(mark);
      const error = await failed;
      throw new SpawnFailed(command.argv, spawnError(error), { cause: error });
    }
    for (const stream of [child.stdin, child.stdout, child.stderr, report, go]) stream?.on('error', () => undefined);
    // What nsenter, setsid or the entry's shell say before the command runs
    // (`nsenter: fork failed: …`), for the reason of a start that failed.
    let entryStderr = '';
    const keepEntryStderr = (data: Buffer): void => {
      if (entryStderr.length < 4096) entryStderr += data.toString('utf8');
    };
    child.stderr.on('data', keepEntryStderr);
    // Its end of the socket closes when the command execs; reading lets 'close' come.
    (go as unknown as Readable).resume();

    const started = await new Promise<StartedProcess>((resolveStart, rejectStart) => {
      let text = '';
      let settled = false;
      const reject = (reason: string, cause?: unknown): void => {
        if (settled) return;
        settled = true;
        rejectStart(new SpawnFailed(command.argv, reason, cause === undefined ? undefined : { cause }));
      };
      const gone = (lookup?: NodeJS.ErrnoException): string => entryFailure(environment, entryStderr, lookup);
      void failed.then((error) => reject(spawnError(error), error));
      report.setEncoding('utf8');
      /** Under `pty`: the entry said ok, and the job on the terminal is to report its pid. */
      let awaitingJob = false;
      let lookupError: NodeJS.ErrnoException | undefined;
      /** Finds the command on the host (the entry waits for its go meanwhile); false if it is not found. */
      const locate = (): boolean => {
        const entry = child.pid === undefined ? {} : readFirstChild(child.pid);
        const leader = entry.pid;
        if (leader === undefined || hostStat(leader)?.pgrp !== leader) {
          lookupError = entry.error;
          return false;
        }
        this.hostLeader = leader;
        // Now, while the entry waits for its go: the leader is the entry's shell, its start time the command's.
        if (options.ownerLossGraceMs !== undefined) this.guarded = GuardedGroup.register(leader, options.ownerLossGraceMs);
        if (command.stdin === 'pipe') {
          try {
            // nsenter's fd 0 is the command's standard input; the handshake's shell may have
            // its fd 0 redirected for a moment.
            this.stdinLink = readlinkSync(`/proc/${child.pid}/fd/0`);
          } catch {
            // not known: writes then behave as on a plain pipe
          }
        }
        return true;
      };
      report.on('data', (data: string) => {
        text += data;
        for (let newline = text.indexOf('\n'); newline >= 0 && !settled; newline = text.indexOf('\n')) {
          const line = text.slice(0, newline);
          text = text.slice(newline + 1);
          if (this.sandboxLeader === undefined) {
            if (!line.startsWith('pid ')) return reject(`the sandbox's entry reported ${JSON.stringify(line)} instead of its pid`);
            this.sandboxLeader = Number(line.slice(4));
            if (!locate()) return reject(gone(lookupError));
            // The go, once the environment is ready (the old root gone, the root checked): only then
            // does the entry check its program and working directory, and exec the command.
            environment.ready.then(
              () => {
                if (!settled) go.end('go\n');
              },
              (error: Error) => reject(error.message, error),
            );
            continue;
          }
          if (line === 'ok' && pty !== undefined) {
            awaitingJob = true;
            continue;
          }
          if (line === 'ok' || awaitingJob) {
            const pid = line === 'ok' ? this.sandboxLeader : this.startTerminal(line);
            if (typeof pid === 'string') return reject(pid);
            settled = true;
            child.stderr!.off('data', keepEntryStderr);
            resolveStart({ pid });
            return;
          }
          return reject(entryRefusal(line, command.argv[0] ?? '', cwd));
        }
      });
      // Only once the report is read to its end: 'exit' can come before the
      // report's last line (the entry script's own "no such executable") is.
      // An entry that ended while the sandbox was still being made ready (it
      // enters once the init has pivoted) most likely ended with it: the
      // sandbox's own failure, once known, is the reason.
      const ended = (): void => {
        if (environment.gone !== undefined) return reject(gone());
        environment.ready.then(
          () => reject(gone()),
          (error: Error) => reject(error.message, error),
        );
      };
      report.once('close', ended);
      child.once('close', ended);
    });

    this.pipes = new CommandPipes(child, events, pty === undefined);
    if (this.paused) this.pipes.pause();
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      // Under a terminal this is script's status: the command's only when its zombie was never seen.
      this.leaderStatus ??= { exitCode: code, signal };
      clearTimeout(this.watchTimer);
      this.terminal?.stopWatching();
      this.check();
    };
    this.terminal?.watch((status) => {
      // Unless nsenter's status came first (script's, when the job was reaped unseen).
      this.leaderStatus ??= status;
      this.check();
    });
    if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
    else child.once('exit', onExit);
    child.once('close', () => {
      this.pipesClosed = true;
      this.check();
    });
    return started;
  }

  /** Reports the exit once the leader is reaped, the pipes are closed and the group is empty. */
  private check(): void {
    clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    if (this.finished || this.leaderStatus === undefined || this.sandboxLeader === undefined) return;
    if (!this.groupGone && !this.treeAlive()) {
      this.groupGone = true;
      this.guarded?.forget();
      // Under a terminal: the holder goes, and script drains the terminal and ends.
      this.terminal?.release();
    }
    if (this.pipesClosed && this.groupGone) return this.finish();
    if (!this.leaderReported) {
      // Others of the tree live on, or hold the pipes: the runtime winds them down.
      this.leaderReported = true;
      this.events!.leaderExited(this.leaderStatus);
    }
    if (!this.pipesClosed && (!this.killed || this.paused)) {
      if (!this.groupGone) this.schedule();
      return;
    }
    // A process that left the group (setsid) holds a pipe; it lives until
    // close() ends the sandbox, and the pipe is given up once quiet.
    if (!this.pipesClosed && this.groupGone && this.pipes!.giveUpWhenQuiet()) return;
    this.schedule();
  }

  /** Whether a process of the command's group (under a terminal, its session) is alive. */
  private treeAlive(): boolean {
    if (this.terminal !== undefined) return this.terminal.othersAlive();
    return this.sandboxLeader !== undefined && this.options.environment.groupAlive(this.sandboxLeader);
  }

  /** Under `pty`: the job's report (`pid N`, or what failed) gives its pid, or why the start failed. */
  private startTerminal(line: string): number | string {
    const found = SandboxTerminal.find(this.options.terminalTools!, this.options.environment.initPid ?? 0, this.hostLeader, line);
    if (typeof found === 'string') return found;
    this.terminal = found;
    this.sandboxLeader = found.sandboxPid;
    const grace = this.options.ownerLossGraceMs;
    if (grace !== undefined) {
      // Should this process die, the guardian ends the terminal's whole session.
      this.guarded?.forget();
      this.guarded = GuardedGroup.register(found.processes.session, grace, true);
    }
    return found.sandboxPid;
  }

  private schedule(): void {
    this.pollTimer = setTimeout(() => this.check(), this.pollDelay);
    this.pollDelay = Math.min(this.pollDelay * 2, POLL_MAX_MS);
  }

  private finish(): void {
    this.finished = true;
    clearTimeout(this.pollTimer);
    clearTimeout(this.watchTimer);
    this.events!.exit(this.leaderStatus!);
  }

  /**
   * `nsenter` stops itself when the command stops (it waits with
   * WUNTRACED), and a stopped `nsenter` cannot pass the exit on. While it
   * lives after a SIGCONT or SIGKILL to the command, it is continued
   * whenever it is stopped and the command is not.
   */
  private watchEntry(delay = POLL_FIRST_MS): void {
    clearTimeout(this.watchTimer);
    const entry = this.child?.pid;
    if (entry === undefined || this.leaderStatus !== undefined || this.finished) return;
    const outer = hostStat(entry);
    if (outer === undefined) return;
    const leader = this.hostLeader === undefined ? undefined : hostStat(this.hostLeader);
    if (outer.state === 'T' && leader?.state !== 'T') signalQuietly(entry, 'SIGCONT');
    this.watchTimer = setTimeout(() => this.watchEntry(Math.min(delay * 2, POLL_MAX_MS)), delay);
  }

  /**
   * Whether the command side of standard input is still open. `nsenter`
   * holds its own copy of the pipe for as long as the command runs, so a
   * command that closed its standard input does not make writes fail with
   * EPIPE as it would in the plain mode. A write that waits for room asks
   * the sandbox's processes instead, and fails with StdinClosed once none
   * of them holds the pipe: the writes before it landed in the pipe's
   * buffer, as writes just before a close do in the plain mode.
   */
  private stdinReadable(): boolean {
    const link = this.stdinLink;
    return link === undefined || this.options.environment.holds(link);
  }

  writeStdin(data: Uint8Array): Promise<void> {
    if (this.terminal !== undefined && this.inputEnded) return Promise.reject(new StdinClosed('the terminal takes no more input'));
    if (this.terminal !== undefined) return this.pipes?.write(data) ?? Promise.reject(new StdinClosed('the terminal is closed'));
    return this.pipes?.write(data, () => this.stdinReadable()) ?? Promise.reject(new StdinClosed('standard input is closed'));
  }

  closeStdin(): Promise<void> {
    // Under a terminal the runtime has typed end-of-file; script's input stays open, or it would type another.
    if (this.terminal !== undefined) {
      this.inputEnded = true;
      return Promise.resolve();
    }
    return this.pipes?.end() ?? Promise.resolve();
  }

  /** Sets the size of the command's terminal (spec 1.5); resolves once the kernel has it. */
  resize(cols: number, rows: number): Promise<void> {
    return this.terminal?.resize(cols, rows) ?? Promise.reject(new StdinClosed('the command has no terminal'));
  }

  async signal(signal: Signal): Promise<void> {
    const leader = this.hostLeader;
    if (this.terminal !== undefined) {
      if (!this.groupGone) this.terminal.signal(signal);
    } else if (leader !== undefined && !this.groupGone) {
      try {
        process.kill(-leader, signal);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
    // (Under a terminal nsenter waits for script, which never stops.)
    if (this.terminal === undefined && (signal === 'SIGCONT' || signal === 'SIGKILL' || signal === 'SIGTERM')) this.watchEntry();
    if (signal === 'SIGKILL') {
      this.killed = true;
      if (this.leaderStatus !== undefined) this.check();
    }
  }

  pause(): void {
    this.paused = true;
    this.pipes?.pause();
  }

  resume(): void {
    this.paused = false;
    this.pipes?.resume();
    if (this.leaderStatus !== undefined) this.check();
  }

  async release(): Promise<void> {
    this.pipes?.destroy();
    clearTimeout(this.pollTimer);
    clearTimeout(this.watchTimer);
    this.terminal?.stopWatching();
    this.finished = true;
    this.guarded?.forgetOnceGone(() => this.treeAlive());
    this.terminal?.release();
    const child = this.child;
    if (!child) return;
    for (const stream of child.stdio) stream?.destroy();
    // A start that failed, or an nsenter that outlived its command: nothing waits for it any more.
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      signalQuietly(child.pid, 'SIGKILL');
    }
  }
}
