import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { SpawnFailed, StdinClosed, type Signal } from '@sandstream/types';
import {
  prlimitArgs,
  readProcStat,
  type CommandSpec,
  type DriverEvents,
  type ExitStatus,
  type ProcessDriver,
  type StartedProcess,
} from '@sandstream/types/runtime';
import { closeOrphanedPipes, spawnMark } from './exhaustion.js';
import { processGuardian } from './guardian.js';
import { CommandPipes } from './pipes.js';
import { groupAlive, signalGroup, sessionHasLiveMember, sessionMembers } from './process-group.js';
import { findExecutable, spawnFailure } from './spawn-failure.js';
import type { LocalPtyModule } from './pty.js';
import { Terminal } from './terminal.js';
import { switchUserArgs, type UserIds } from './users.js';

/** What the local driver needs besides the command. */
export interface ChildDriverOptions {
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Absolute; undefined means this process's working directory at spawn time. */
  readonly defaultCwd: string | undefined;
  readonly prlimitPath: string | undefined;
  /** util-linux's setpriv; without it, a user switch drops supplementary groups. */
  readonly setprivPath: string | undefined;
  /** Resolved from `command.user` when the driver was created. */
  readonly user: UserIds | undefined;
  /**
   * The grace period with which this process's guardian (guardian.ts)
   * ends the command's group should this process die first; undefined:
   * no guardian, and the group outlives this process.
   */
  readonly ownerLossGraceMs?: number | undefined;
  /**
   * What a command with `pty` needs (ADR-0053): the terminal library and
   * util-linux's `setsid`; undefined where the sandbox declares no `pty`.
   */
  readonly terminal?: { readonly module: LocalPtyModule; readonly setsidPath: string } | undefined;
}

/** First and last interval of the poll that waits for a group to empty. */
const POLL_FIRST_MS = 1;
const POLL_MAX_MS = 50;
/** Interval of the look at a group still alive when its driver was released. */
const LINGER_POLL_MS = 1_000;

/**
 * Runs one command as a child process that leads its own process group, so
 * signals reach everything it starts. The command is finished once its
 * leader was reaped, both pipes reached end-of-file and no live process is
 * left in its group. When the leader exits, the driver reports
 * `leaderExited` and the runtime winds the rest of the group down through
 * `signal()` on its own timers (SIGTERM, SIGKILL after its grace period);
 * the driver only watches for the group to empty and the pipes to drain,
 * and once SIGKILL was sent, stops waiting for a pipe that a process which
 * left the group holds open.
 *
 * With `pty` (ADR-0053) the command leads a session on a terminal of its
 * own (terminal.ts) instead: the session is the tree that is signalled and
 * watched, and the output ends when the terminal's master has drained.
 */
export class ChildDriver implements ProcessDriver {
  private child: ChildProcess | undefined;
  private pipes: CommandPipes | undefined;
  /** Under `pty`: the terminal, whose session (led by the command) is the tree instead of its group. */
  private terminal: Terminal | undefined;
  /** Under `pty`: the leader's start time, which tells the session's processes from older ones. */
  private leaderStartTicks = 0;
  private events: DriverEvents | undefined;
  private leaderStatus: ExitStatus | undefined;
  private pipesClosed = false;
  /** SIGKILL was sent to the group: what still holds a pipe is outside it. */
  private groupKilled = false;
  private groupGone = false;
  private finished = false;
  private paused = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private pollDelay = POLL_FIRST_MS;
  /** The group is registered with this process's guardian. */
  private guarded = false;

  constructor(
    private readonly command: CommandSpec,
    private readonly options: ChildDriverOptions,
  ) {}

  start(events: DriverEvents): Promise<StartedProcess> {
    const { command, options } = this;
    this.events = events;
    const user = options.user;
    const cwd =
      command.cwd === undefined
        ? (options.defaultCwd ?? process.cwd())
        : resolve(options.defaultCwd ?? process.cwd(), command.cwd);
    // Another account gets its own HOME, USER and LOGNAME (as su and sudo
    // do), unless the call sets them.
    const identity: Record<string, string> = {};
    if (user?.name !== undefined) identity['USER'] = identity['LOGNAME'] = user.name;
    if (user?.home !== undefined) identity['HOME'] = user.home;
    const pty = command.pty;
    if (pty !== undefined && options.terminal === undefined) {
      return Promise.reject(new SpawnFailed(command.argv, 'this sandbox has no terminals (capability pty)'));
    }
    // A terminal's TERM is fixed unless the call sets it (ADR-0052, T1).
    const env: Record<string, string> = { ...options.baseEnv, ...identity, ...(pty === undefined ? {} : { TERM: 'xterm-256color' }), ...command.env };
    const wrapper: string[] = [];
    // setsid (not a group leader, as it is not detached) calls setsid()
    // without forking and makes the slave on fd 0 its controlling terminal,
    // then execs: the command leads the session, under the pid spawned.
    if (pty !== undefined) wrapper.push(options.terminal!.setsidPath, '--ctty', '--');
    // Limits are set while still privileged; setpriv then drops to the account.
    if (command.limits !== undefined) wrapper.push(...prlimitArgs(options.prlimitPath!, command.limits));
    const viaSetpriv = user !== undefined && options.setprivPath !== undefined;
    if (viaSetpriv) wrapper.push(...switchUserArgs(options.setprivPath!, user));
    if (wrapper.length > 0) {
      if (findExecutable(command.argv[0]!, env['PATH'], cwd) === undefined) {
        const missing = Object.assign(new Error(`spawn ${command.argv[0]} ENOENT`), { code: 'ENOENT' });
        return Promise.reject(new SpawnFailed(command.argv, spawnFailure(command, cwd, missing), { cause: missing }));
      }
    }
    const [file, ...args] = [...wrapper, ...command.argv];
    if (pty !== undefined) {
      // Started first, so that it does not inherit the master about to be opened.
      if (options.ownerLossGraceMs !== undefined) processGuardian()?.ensureRunning();
      try {
        this.terminal = new Terminal(options.terminal!.module, pty);
      } catch (error) {
        return Promise.reject(new SpawnFailed(command.argv, `no terminal could be opened: ${(error as Error).message}`, { cause: error }));
      }
    }
    const terminal = this.terminal;
    let child: ChildProcess;
    const mark = spawnMark();
    try {
      child = spawn(file!, args, {
        cwd,
        env,
        stdio: terminal?.stdio() ?? [command.stdin, 'pipe', 'pipe'],
        detached: terminal === undefined,
        ...(user === undefined || viaSetpriv ? {} : { uid: user.uid, gid: user.gid }),
      });
    } catch (error) {
      terminal?.destroy();
      return Promise.reject(
        new SpawnFailed(command.argv, spawnFailure(command, cwd, error as NodeJS.ErrnoException), { cause: error }),
      );
    }
    this.child = child;
    // Now, before the event loop can reap the leader: its pid is still its own.
    if (child.pid !== undefined && terminal !== undefined) this.leaderStartTicks = readProcStat(child.pid)?.startTicks ?? 0;
    if (child.pid !== undefined && options.ownerLossGraceMs !== undefined) {
      this.guarded = processGuardian()?.register(child.pid, options.ownerLossGraceMs, terminal !== undefined) ?? false;
    }

    const started = new Promise<StartedProcess>((resolveStart, rejectStart) => {
      child.once('spawn', () => resolveStart({ pid: child.pid! }));
      // Listened to before anything else can throw: a spawn that failed
      // (EMFILE, EAGAIN, ENOENT) emits 'error' on the next tick, and with no
      // listener that would end this whole process.
      child.on('error', (error: NodeJS.ErrnoException) => {
        if (child.pid === undefined) {
          terminal?.destroy();
          rejectStart(new SpawnFailed(command.argv, spawnFailure(command, cwd, error), { cause: error }));
        }
      });
      child.once('exit', (code, signal) => {
        this.leaderStatus = { exitCode: code, signal };
        if (child.pid === undefined) return;
        if (this.groupKilled) {
          // Teardown already sent SIGKILL to the group; a member forked
          // while it was on its way gets it too. Best effort: an EPERM (a
          // set-uid member) must not become an uncaught exception here.
          try {
            this.signalTree('SIGKILL');
          } catch {
            // The poll keeps watching the group.
          }
        }
        this.reportExitIfFinished();
        // The command itself is done: its timeout no longer counts, and the
        // runtime winds down what it left in the group.
        if (!this.finished) events.leaderExited(this.leaderStatus);
      });
      if (terminal !== undefined) {
        // The terminal's output ends when its master has drained: 'close' of
        // the child says nothing, it has no pipes.
        terminal.attach(events, () => {
          this.pipesClosed = true;
          this.reportExitIfFinished();
        });
        return;
      }
      // Emitted once the leader exited and both output pipes are closed.
      child.once('close', () => {
        this.pipesClosed = true;
        this.reportExitIfFinished();
      });
    });
    if (terminal !== undefined) return started;
    // Out of descriptors (EMFILE, ENFILE), Node.js makes no pipes at all and
    // reports the failure through 'error' only.
    if (child.stdout && child.stderr) this.pipes = new CommandPipes(child, events);
    else closeOrphanedPipes(mark);
    return started;
  }

  /** True while a process of the command's tree (its group; under a terminal, its session) is alive. */
  private treeAlive(): boolean {
    const pid = this.child!.pid!;
    if (this.terminal === undefined) return groupAlive(pid);
    return sessionHasLiveMember('/proc', pid, this.leaderStartTicks) ?? true;
  }

  /**
   * Sends `signal` to the command's group, or under a terminal to every
   * process of its session, each by its pid (never a negative one: the
   * library's terminal makes a pid below 1 the mistake to rule out). A
   * second look signals what was forked while the first was being sent;
   * SIGKILL is repeated by the poll until the session is empty.
   */
  private signalTree(signal: NodeJS.Signals): void {
    const pid = this.child!.pid!;
    if (this.terminal === undefined) return signalGroup(pid, signal);
    const signalled = new Set<number>();
    let failure: unknown;
    for (let look = 0; look < 2; look++) {
      for (const member of sessionMembers(pid, this.leaderStartTicks)) {
        if (signalled.has(member)) continue;
        signalled.add(member);
        try {
          process.kill(member, signal);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ESRCH') failure ??= error;
        }
      }
    }
    if (failure !== undefined) throw failure;
  }

  /** Reports the exit once the leader is reaped, the pipes are closed and the group is empty. */
  private reportExitIfFinished(): void {
    clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    const child = this.child;
    if (this.finished || this.leaderStatus === undefined || child?.pid === undefined) return;
    if (!this.groupGone && !this.treeAlive()) this.groupGone = true;
    if (this.terminal !== undefined) return this.terminalPoll();
    if (this.pipesClosed) {
      if (this.groupGone) this.finish();
      else this.schedule(); // members without our pipes linger: the runtime's SIGKILL ends them
      return;
    }
    // The pipes are open. 'close', the runtime's SIGKILL or resume() call
    // again, except in one case: the group is gone and output is flowing,
    // yet no end-of-file comes, because a process that left the group
    // (setsid) holds a pipe; it is given up once quiet after SIGKILL.
    if (!this.groupKilled || this.paused) return;
    if (this.groupGone && this.pipes!.giveUpWhenQuiet()) return;
    this.schedule();
  }

  /**
   * Under a terminal, nothing signals the session's end: it is polled for.
   * Once it is gone, the held slave is closed (after output went quiet)
   * and the master drains to its end; a master that does not end (a
   * process that left the session holds the slave) is given up once quiet
   * after SIGKILL.
   */
  private terminalPoll(): void {
    if (this.pipesClosed) {
      if (this.groupGone) this.finish();
      else this.schedule();
      return;
    }
    if (this.groupGone) {
      this.terminal!.sessionGone();
      if (this.groupKilled && !this.paused && this.terminal!.giveUpWhenQuiet()) return;
    } else if (this.groupKilled) {
      // A process forked while SIGKILL was on its way, or one that made a group of its own.
      try {
        this.signalTree('SIGKILL');
      } catch {
        // The poll keeps watching the session.
      }
    }
    this.schedule();
  }

  private schedule(): void {
    this.pollTimer = setTimeout(() => this.reportExitIfFinished(), this.pollDelay);
    this.pollDelay = Math.min(this.pollDelay * 2, POLL_MAX_MS);
  }

  private finish(): void {
    this.finished = true;
    clearTimeout(this.pollTimer);
    this.unguard();
    this.events!.exit(this.leaderStatus!);
  }

  /** The group is gone: the guardian forgets it, so that it never signals a later group of that number. */
  private unguard(): void {
    if (!this.guarded) return;
    this.guarded = false;
    processGuardian()?.unregister(this.child!.pid!, this.terminal !== undefined);
  }

  writeStdin(data: Uint8Array): Promise<void> {
    if (this.terminal !== undefined) return this.terminal.write(data);
    return this.pipes?.write(data) ?? Promise.reject(new StdinClosed('standard input is closed'));
  }

  closeStdin(): Promise<void> {
    // Under a terminal the runtime has typed end-of-file; the master stays open for output.
    if (this.terminal !== undefined) {
      this.terminal.endInput();
      return Promise.resolve();
    }
    return this.pipes?.end() ?? Promise.resolve();
  }

  /** Sets the terminal's size (spec 1.5); resolves once the kernel has it. */
  async resize(cols: number, rows: number): Promise<void> {
    if (this.terminal === undefined) throw new StdinClosed('the command has no terminal');
    this.terminal.resize(cols, rows);
  }

  async signal(signal: Signal): Promise<void> {
    // Exactly the one signal asked for: kill() is a single signal, and the
    // runtime's termination sequence sends its own SIGHUP (under a
    // terminal) and SIGCONT after SIGTERM.
    if (this.child?.pid !== undefined && !this.groupGone && !this.finished) this.signalTree(signal);
    if (signal === 'SIGKILL') this.killSent();
  }

  /**
   * The runtime's grace period is over and whatever the group still holds
   * is being killed: from now on a pipe still open after the group is gone
   * is held from outside it, and is waited for only until it goes quiet.
   */
  private killSent(): void {
    if (this.groupKilled) return;
    this.groupKilled = true;
    if (this.leaderStatus !== undefined) this.reportExitIfFinished();
  }

  pause(): void {
    this.paused = true;
    this.pipes?.pause();
    this.terminal?.pause();
  }

  resume(): void {
    this.paused = false;
    this.pipes?.resume();
    this.terminal?.resume();
    if (this.leaderStatus !== undefined) this.reportExitIfFinished();
  }

  async release(): Promise<void> {
    clearTimeout(this.pollTimer);
    this.finished = true;
    this.pipes?.destroy();
    this.terminal?.destroy();
    if (this.guarded) this.unguardOnceGone();
  }

  /**
   * Released while the group may still live (the kill wait ran out): it
   * stays registered, so that this process's death still ends it, until a
   * look, now or every second, finds it gone.
   */
  private unguardOnceGone(): void {
    if (!this.treeAlive()) {
      this.unguard();
      return;
    }
    const timer = setInterval(() => {
      if (this.treeAlive()) return;
      clearInterval(timer);
      this.unguard();
    }, LINGER_POLL_MS);
    timer.unref();
  }
}
