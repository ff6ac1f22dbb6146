import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { SpawnFailed, StdinClosed, type Signal } from '@sandstream/types';
import { prlimitArgs, type CommandSpec, type DriverEvents, type ExitStatus, type ProcessDriver, type StartedProcess } from '@sandstream/types/runtime';
import { closeOrphanedPipes, describeExhaustion, spawnMark } from './exhaustion.js';
import { processGuardian } from './guardian.js';
import { CommandPipes } from './pipes.js';
import { groupHasLiveMember } from './process-group.js';
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
}

/** First and last interval of the poll that waits for a group to empty. */
const POLL_FIRST_MS = 1;
const POLL_MAX_MS = 50;
/** Interval of the look at a group still alive when its driver was released. */
const LINGER_POLL_MS = 1_000;

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    // A negative pid addresses the whole process group the command leads.
    process.kill(-pgid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/**
 * True while a process of the group is alive. `kill(-pgid, 0)` also counts
 * zombies, and an orphan whose new parent does not reap (a container's
 * init often does not) stays a zombie for good; so when procfs exists, a
 * group whose members are all zombies counts as gone.
 */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  // Without procfs, zombies count as alive.
  return groupHasLiveMember('/proc', pgid) ?? true;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Where `execvp` would find `file`, or undefined. Needed when `prlimit` or
 * `setpriv` execs the command: their failure to find the program would
 * otherwise look like the command's own exit status.
 */
function findExecutable(file: string, path: string | undefined, cwd: string): string | undefined {
  if (file.includes('/')) {
    const full = resolve(cwd, file);
    return isExecutableFile(full) ? full : undefined;
  }
  for (const dir of (path ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter)) {
    const full = resolve(cwd, join(dir === '' ? '.' : dir, file));
    if (isExecutableFile(full)) return full;
  }
  return undefined;
}

/** Why a spawn failed, in words a caller can act on. */
function spawnFailure(command: CommandSpec, cwd: string, error: NodeJS.ErrnoException): string {
  const exhausted = describeExhaustion(error);
  if (exhausted !== undefined) return exhausted;
  const code = error.code ?? error.message;
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') {
    let cwdProblem: string | undefined;
    try {
      if (!statSync(cwd).isDirectory()) cwdProblem = 'is not a directory';
    } catch (statError) {
      cwdProblem = (statError as NodeJS.ErrnoException).code === 'EACCES' ? 'is not accessible' : 'does not exist';
    }
    if (cwdProblem !== undefined) return `${code}: the working directory ${JSON.stringify(cwd)} ${cwdProblem}`;
    if (code === 'ENOENT') return `ENOENT: no such executable ${JSON.stringify(command.argv[0] ?? '')}`;
  }
  return `${code}: ${error.message}`;
}

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
 */
export class ChildDriver implements ProcessDriver {
  private child: ChildProcess | undefined;
  private pipes: CommandPipes | undefined;
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
    const env = { ...options.baseEnv, ...identity, ...command.env };
    // Limits are set while still privileged; setpriv then drops to the account.
    const wrapper: string[] = [];
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
    let child: ChildProcess;
    const mark = spawnMark();
    try {
      child = spawn(file!, args, {
        cwd,
        env,
        stdio: [command.stdin, 'pipe', 'pipe'],
        detached: true,
        ...(user === undefined || viaSetpriv ? {} : { uid: user.uid, gid: user.gid }),
      });
    } catch (error) {
      return Promise.reject(
        new SpawnFailed(command.argv, spawnFailure(command, cwd, error as NodeJS.ErrnoException), { cause: error }),
      );
    }
    this.child = child;
    // Now, before the event loop can reap the leader: its pid is still its own.
    if (child.pid !== undefined && options.ownerLossGraceMs !== undefined) {
      this.guarded = processGuardian()?.register(child.pid, options.ownerLossGraceMs) ?? false;
    }

    const started = new Promise<StartedProcess>((resolveStart, rejectStart) => {
      child.once('spawn', () => resolveStart({ pid: child.pid! }));
      // Listened to before anything else can throw: a spawn that failed
      // (EMFILE, EAGAIN, ENOENT) emits 'error' on the next tick, and with no
      // listener that would end this whole process.
      child.on('error', (error: NodeJS.ErrnoException) => {
        if (child.pid === undefined) {
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
            signalGroup(child.pid, 'SIGKILL');
          } catch {
            // The poll keeps watching the group.
          }
        }
        this.reportExitIfFinished();
        // The command itself is done: its timeout no longer counts, and the
        // runtime winds down what it left in the group.
        if (!this.finished) events.leaderExited(this.leaderStatus);
      });
      // Emitted once the leader exited and both output pipes are closed.
      child.once('close', () => {
        this.pipesClosed = true;
        this.reportExitIfFinished();
      });
    });
    // Out of descriptors (EMFILE, ENFILE), Node.js makes no pipes at all and
    // reports the failure through 'error' only.
    if (child.stdout && child.stderr) this.pipes = new CommandPipes(child, events);
    else closeOrphanedPipes(mark);
    return started;
  }

  /** Reports the exit once the leader is reaped, the pipes are closed and the group is empty. */
  private reportExitIfFinished(): void {
    clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    const child = this.child;
    if (this.finished || this.leaderStatus === undefined || child?.pid === undefined) return;
    if (!this.groupGone && !groupAlive(child.pid)) this.groupGone = true;
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
    processGuardian()?.unregister(this.child!.pid!);
  }

  writeStdin(data: Uint8Array): Promise<void> {
    return this.pipes?.write(data) ?? Promise.reject(new StdinClosed('standard input is closed'));
  }

  closeStdin(): Promise<void> {
    return this.pipes?.end() ?? Promise.resolve();
  }

  async signal(signal: Signal): Promise<void> {
    // Exactly the one signal asked for: kill() is a single signal, and the
    // runtime's termination sequence sends its own SIGCONT after SIGTERM.
    const pgid = this.child?.pid;
    if (pgid !== undefined && !this.groupGone && !this.finished) signalGroup(pgid, signal);
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
  }

  resume(): void {
    this.paused = false;
    this.pipes?.resume();
    if (this.leaderStatus !== undefined) this.reportExitIfFinished();
  }

  async release(): Promise<void> {
    clearTimeout(this.pollTimer);
    this.finished = true;
    this.pipes?.destroy();
    if (this.guarded) this.unguardOnceGone(this.child!.pid!);
  }

  /**
   * Released while the group may still live (the kill wait ran out): it
   * stays registered, so that this process's death still ends it, until a
   * look, now or every second, finds it gone.
   */
  private unguardOnceGone(pgid: number): void {
    if (!groupAlive(pgid)) {
      this.unguard();
      return;
    }
    const timer = setInterval(() => {
      if (groupAlive(pgid)) return;
      clearInterval(timer);
      this.unguard();
    }, LINGER_POLL_MS);
    timer.unref();
  }
}
