/**
 * The plain mode's guard against the death of this process: a command
 * never outlives the code that started it, even when that code is killed
 * (SIGKILL, the OOM killer) or exits without disposing of its commands.
 *
 * Each plain command leads a process group of its own and nothing else
 * signals it (a command on a terminal leads a session of its own), so a
 * small `sh` started once per process (per thread), in a session of its
 * own, holds the list of those groups and sessions. It reads them from a
 * pipe whose only writer is this process, and the kernel closes that pipe
 * when this process ends, however it ends: at end-of-file the guardian
 * runs the termination sequence (spec 9.8) on every group still listed,
 * then exits. While this process lives, the guardian only blocks in `read`
 * (a builtin): no fork, no timer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isLiveProcess, readProcStat } from '@sandstream/types/runtime';
import { closeOrphanedPipes, spawnMark } from './exhaustion.js';
import { GUARDIAN_SCRIPT } from './guardian-script.js';
import { findUtility } from './utilities.js';

export { GUARDIAN_SCRIPT } from './guardian-script.js';

/**
 * The guardian's arguments after the shell's path: the program comes in
 * the environment, so that `ps` shows one short line, not the script, and
 * `$0` names it.
 */
export const GUARDIAN_ARGS: readonly string[] = ['-c', 'eval "$SANDSTREAM_GUARDIAN"', 'sandstream-guardian'];

/**
 * The guardian's whole environment. PATH: builtins, or the system's own
 * programs, never the caller's. SHLVL: bash, whose standard input is a
 * socket here (Node.js makes its pipes with socketpair), takes itself for a
 * shell run by rshd and reads ~/.bashrc unless it is nested.
 */
export const GUARDIAN_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/bin:/bin:/usr/sbin:/sbin',
  LC_ALL: 'C',
  SHLVL: '1',
  SANDSTREAM_GUARDIAN: GUARDIAN_SCRIPT,
};

/** What the guardian knows of a group. */
interface Registration {
  /** Its leader's start time, in clock ticks since boot. */
  readonly startTicks: number;
  readonly graceMs: number;
}

/**
 * This process's side of the guardian: the groups it registered, and the
 * `sh` that ends them should this process die first. Started at the first
 * registration; one that died (killed by someone) is replaced at the next
 * registration or removal, and is told every group still registered.
 */
export class Guardian {
  private child: ChildProcess | undefined;
  /** Keyed by the request's name: `PGID`, or `sSID` for a session. */
  private readonly groups = new Map<string, Registration>();

  constructor(private readonly shell: string) {}

  /** The guardian's pid while one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The groups (and terminal sessions) registered now, by their leaders' pids. */
  registered(): number[] {
    return [...this.groups.keys()].map((key) => Number(key.replace(/^s/, '')));
  }

  /** Starts the guardian now if none runs (before a terminal opens, so that it inherits no master). */
  ensureRunning(): void {
    if (!this.running()) this.send('');
  }

  /**
   * Registers the group that `pgid` leads, with `graceMs` between SIGTERM
   * and SIGKILL. To be called right after the spawn, while the leader is
   * this process's child and not yet reaped (so its pid is still its own):
   * its start time tells it from a later process given the same number.
   * False when its `/proc/PGID/stat` cannot be read. With `session`, the
   * session `pgid` leads (a terminal command's) is registered instead: its
   * every group is ended, SIGHUP first.
   */
  register(pgid: number, graceMs: number, session = false): boolean {
    const startTicks = readProcStat(pgid)?.startTicks;
    if (startTicks === undefined || !Number.isSafeInteger(startTicks)) return false;
    const registration = { startTicks, graceMs: Math.ceil(Math.min(graceMs, 2 ** 31 - 1)) };
    const key = session ? `s${pgid}` : String(pgid);
    this.groups.set(key, registration);
    this.send(line(key, registration));
    return true;
  }

  /** Removes a group (with `session`, a session) once it has no live member left. */
  unregister(pgid: number, session = false): void {
    const key = session ? `s${pgid}` : String(pgid);
    if (this.groups.delete(key)) this.send(`-${key}\n`);
  }

  /** Writes `text` to a running guardian, or starts one, which is told every registered group. */
  private send(text: string): void {
    if (this.running()) {
      this.child!.stdin!.write(text);
      return;
    }
    this.child = this.start();
    this.child?.stdin!.write([...this.groups].map(([pgid, registration]) => line(pgid, registration)).join(''));
  }

  /**
   * A guardian that was killed stays a zombie until this process's event
   * loop reaps it; a look at /proc sees it dead at once, so a group is not
   * written into a pipe nobody reads.
   */
  private running(): boolean {
    const child = this.child;
    return child?.pid !== undefined && child.exitCode === null && child.signalCode === null && isLiveProcess(child.pid);
  }

  private start(): ChildProcess | undefined {
    const mark = spawnMark();
    let child: ChildProcess;
    try {
      child = spawn(this.shell, GUARDIAN_ARGS, {
        stdio: ['pipe', 'ignore', 'ignore'],
        // Its own session: a signal to this process's group (a Ctrl-C) does not reach it.
        detached: true,
        // Pinning no directory of the caller's for as long as it lives.
        cwd: '/',
        env: GUARDIAN_ENV,
      });
    } catch {
      return undefined;
    }
    const gone = (): void => {
      if (this.child === child) this.child = undefined;
      child.stdin?.destroy();
    };
    child.on('error', gone);
    child.on('exit', gone);
    if (!child.stdin) {
      // Out of descriptors: Node.js made pipes it hands to nobody.
      closeOrphanedPipes(mark);
      return undefined;
    }
    child.stdin.on('error', gone);
    // Neither it nor its pipe keeps this process alive.
    child.unref();
    (child.stdin as unknown as { unref?(): void }).unref?.();
    return child;
  }
}

function line(key: string, { startTicks, graceMs }: Registration): string {
  return `+${key} ${startTicks} ${graceMs}\n`;
}

/** The guardian, once looked for: null where it cannot work. */
interface Slot {
  guardian?: Guardian | null;
}
const slot: Slot = ((globalThis as Record<symbol, Slot | undefined>)[Symbol.for('@sandstream/adapter-local/guardian@1')] ??= {});

/**
 * The guardian of this process (this thread), shared by every copy of this
 * module loaded in it, so that they hold one pipe between them; undefined
 * where it cannot work: no `sh` in the system directories, or no procfs.
 */
export function processGuardian(): Guardian | undefined {
  if (slot.guardian === undefined) {
    const shell = findUtility('sh');
    slot.guardian = shell !== undefined && existsSync('/proc/self/stat') && existsSync('/proc/uptime') ? new Guardian(shell) : null;
  }
  return slot.guardian ?? undefined;
}

/** Interval of the look at a group still alive when its command was released. */
const LINGER_POLL_MS = 1_000;

/**
 * One command's process group registered with this process's guardian,
 * for a driver that does not use the guardian's registration by itself
 * (the isolated mode's, for an environment this process joined).
 */
export class GuardedGroup {
  private registered = true;

  private constructor(
    private readonly pgid: number,
    private readonly session: boolean,
  ) {}

  /**
   * Registers group `pgid` (its host number, its leader alive) with
   * `graceMs` between SIGTERM and SIGKILL; undefined where there is no
   * guardian or the leader's start time cannot be read. With `session`,
   * the session `pgid` leads (a terminal command's) instead.
   */
  static register(pgid: number, graceMs: number, session = false): GuardedGroup | undefined {
    return processGuardian()?.register(pgid, graceMs, session) === true ? new GuardedGroup(pgid, session) : undefined;
  }

  /** The group is gone: the guardian forgets it, so that it never signals a later group of that number. */
  forget(): void {
    if (!this.registered) return;
    this.registered = false;
    processGuardian()?.unregister(this.pgid, this.session);
  }

  /**
   * The command was released, perhaps with its group alive (the kill wait
   * ran out): it stays registered, so that this process's death still ends
   * it, until `alive()`, asked now and every second, says it is gone.
   */
  forgetOnceGone(alive: () => boolean): void {
    if (!this.registered || !alive()) return this.forget();
    const timer = setInterval(() => {
      if (alive()) return;
      clearInterval(timer);
      this.forget();
    }, LINGER_POLL_MS);
    timer.unref();
  }
}
