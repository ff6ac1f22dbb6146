import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IsolationSupport } from './probe.js';
import { INIT_SCRIPT } from './scripts.js';

/** A host path made visible inside the sandbox. */
export interface IsolatedMount {
  /** Absolute host path (a directory or a file). */
  readonly source: string;
  /** Absolute path inside the sandbox. */
  readonly target: string;
  readonly readonly: boolean;
}

/** How one sandbox's environment is built. */
export interface EnvironmentSettings {
  readonly support: IsolationSupport;
  /** Share the host's network instead of a namespace with only loopback. */
  readonly network: boolean;
  /** The private, writable work directory's path inside the sandbox. */
  readonly workDir: string;
  readonly mounts: readonly IsolatedMount[];
}

/** Environments not yet destroyed, ended with this process on a normal exit. */
const live = new Set<Environment>();
let exitHookInstalled = false;

function endAllOnExit(): void {
  for (const environment of live) environment.endNow();
}

/** The environment ended, or never started: a command cannot enter it. */
export class EnvironmentGone extends Error {
  override name = 'EnvironmentGone';
}

/** Fields of /proc/<pid>/stat after the command name: state, ppid, pgrp. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ', 3);
}

/**
 * One sandbox's namespaces, held by a long-lived init process (pid 1 of the
 * PID namespace) that `unshare` starts; commands enter them with `nsenter`.
 * Killing the init ends the PID namespace, and the kernel kills everything
 * left in it: that is `destroy()`, the last word of `close()`.
 *
 * Should this Node.js process die without `destroy()`, the environment dies
 * with it: `setpriv --pdeathsig KILL` kills `unshare` when its parent goes,
 * and `unshare --kill-child` then kills the init.
 */
export class Environment {
  /** Resolves once the filesystem is built and commands may enter. */
  readonly ready: Promise<void>;
  private readonly holder: ChildProcess;
  private readonly stateDir: string;
  private initPidValue: number | undefined;
  private holderExited: Promise<void>;
  private destroying: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(readonly settings: EnvironmentSettings) {
    const { support, network, workDir, mounts } = settings;
    this.stateDir = mkdtempSync(join(tmpdir(), 'sandstream-'));
    const root = join(this.stateDir, 'root');
    mkdirSync(root);
    const unshareArgs = [
      ...(support.via === 'user-namespace' ? ['--user', '--map-root-user'] : []),
      '--pid',
      '--fork',
      '--kill-child',
      '--mount',
      '--propagation',
      'private',
      '--ipc',
      '--uts',
      ...(network ? [] : ['--net']),
    ];
    const mountArgs = mounts.flatMap((mount) => [mount.source, mount.target, mount.readonly ? 'ro' : 'rw']);
    this.holder = spawn(
      support.setpriv,
      [
        '--pdeathsig',
        'KILL',
        '--',
        support.unshare,
        ...unshareArgs,
        '--',
        '/bin/sh',
        '-c',
        INIT_SCRIPT,
        'sandstream-init',
        root,
        workDir,
        network ? '0' : '1',
        ...mountArgs,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
        env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' },
      },
    );
    const holder = this.holder;
    // Once ready, neither the environment nor its pipes keep this process
    // alive; until then they do, as a command may be waiting for it.
    const unref = (): void => {
      holder.unref();
      (holder.stdout as unknown as { unref?(): void }).unref?.();
      (holder.stderr as unknown as { unref?(): void }).unref?.();
    };
    let stdout = '';
    let stderr = '';
    holder.stderr!.setEncoding('utf8').on('data', (text: string) => {
      // Enough to say why a start failed.
      if (stderr.length < 4096) stderr += text;
    });
    holder.stdout!.on('error', () => undefined);
    holder.stderr!.on('error', () => undefined);
    this.holderExited = new Promise((resolve) => holder.once('close', () => resolve()));
    this.ready = new Promise<void>((resolve, reject) => {
      const fail = (reason: string): void => {
        this.failure = new EnvironmentGone(`the sandbox's environment did not start: ${reason}`);
        reject(this.failure);
      };
      holder.once('error', (error) => fail(error.message));
      // unshare keeps the pipe open: the line, not end-of-file, says ready.
      holder.stdout!.setEncoding('utf8').on('data', (text: string) => {
        if (this.initPidValue !== undefined || this.failure !== undefined) return;
        stdout += text;
        if (!stdout.startsWith('ready\n')) return;
        const pid = holder.pid === undefined ? undefined : firstChild(holder.pid);
        if (pid === undefined) return fail('its init process could not be found');
        this.initPidValue = pid;
        unref();
        resolve();
      });
      holder.once('close', (code, signal) => {
        if (this.initPidValue !== undefined) {
          // unshare ends as its child, the init, ended.
          this.failure ??= new EnvironmentGone(
            `the sandbox's environment has ended (its init ${signal === null ? `exited with ${code}` : `was killed by ${signal}`})`,
          );
          return;
        }
        fail(stderr.trim() || `unshare ended with ${code ?? signal}`);
      });
    });
    // A failure is reported to each command that tries to enter, not as an unhandled rejection.
    this.ready.catch(() => undefined);
    live.add(this);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on('exit', endAllOnExit);
    }
  }

  /**
   * Synchronously ends the environment and removes its host directory:
   * for this process's exit, when nothing can be awaited. (Were this
   * process killed instead, --pdeathsig ends the environment, and only the
   * empty directory stays behind.)
   */
  endNow(): void {
    live.delete(this);
    for (const pid of [this.initPidValue, this.holder.pid === undefined ? undefined : -this.holder.pid]) {
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(this.stateDir, { recursive: true, force: true });
  }

  /** The init's pid on the host, once ready. */
  get initPid(): number | undefined {
    return this.failure === undefined && this.destroying === undefined ? this.initPidValue : undefined;
  }

  /** Why commands cannot enter any more, or undefined while they can. */
  get gone(): Error | undefined {
    if (this.destroying !== undefined) return new EnvironmentGone("the sandbox's environment was destroyed by close()");
    return this.failure;
  }

  /**
   * True while a process of the sandbox is alive in process group `pgid`
   * (the sandbox's own numbering). Zombies count as gone. Reads the
   * sandbox's /proc, which lists only the sandbox's processes; once the
   * namespace has ended, nothing of it is alive.
   */
  groupAlive(pgid: number): boolean {
    const init = this.initPidValue;
    if (init === undefined) return false;
    const proc = `/proc/${init}/root/proc`;
    let entries: string[];
    try {
      entries = readdirSync(proc);
    } catch {
      return false;
    }
    for (const entry of entries) {
      const first = entry.charCodeAt(0);
      if (first < 48 || first > 57) continue;
      let stat: string;
      try {
        stat = readFileSync(`${proc}/${entry}/stat`, 'latin1');
      } catch {
        continue;
      }
      const [state, , pgrp] = statFields(stat);
      if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
    }
    return false;
  }

  /**
   * Whether a process of the sandbox holds `target` (a `/proc/<pid>/fd`
   * link text such as `socket:[123]`) open. `nsenter`, which holds every
   * pipe of the command it waits for, is on the host and not counted.
   */
  holds(target: string): boolean {
    const init = this.initPidValue;
    if (init === undefined || this.destroying !== undefined) return false;
    const proc = `/proc/${init}/root/proc`;
    let entries: string[];
    try {
      entries = readdirSync(proc);
    } catch (error) {
      // The namespace has ended: nothing of it holds anything.
      return (error as NodeJS.ErrnoException).code !== 'ENOENT';
    }
    for (const entry of entries) {
      const first = entry.charCodeAt(0);
      if (first < 48 || first > 57) continue;
      let fds: string[];
      try {
        fds = readdirSync(`${proc}/${entry}/fd`);
      } catch (error) {
        // A process that is gone holds nothing; one that cannot be read may.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        return true;
      }
      for (const fd of fds) {
        try {
          if (readlinkSync(`${proc}/${entry}/fd/${fd}`) === target) return true;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return true;
        }
      }
    }
    return false;
  }

  /**
   * Ends the environment: the init is killed, so the kernel kills every
   * process of the PID namespace; resolves once `unshare` has seen the init
   * die, which the kernel allows only after the namespace is empty.
   */
  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      // Whoever awaits close() waits for the environment's end.
      this.holder.ref();
      (this.holder.stdout as unknown as { ref?(): void }).ref?.();
      (this.holder.stderr as unknown as { ref?(): void }).ref?.();
      // Not waiting for a start that may never finish: an init still building
      // the filesystem is killed as well (unshare's --kill-child takes it along).
      const init = this.initPidValue;
      try {
        if (init !== undefined) process.kill(init, 'SIGKILL');
      } catch {
        // already gone
      }
      try {
        // setpriv/unshare lead their own group.
        if (this.holder.pid !== undefined) process.kill(-this.holder.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await this.holderExited;
      live.delete(this);
      rmSync(this.stateDir, { recursive: true, force: true });
    })();
    return this.destroying;
  }
}

/** The state, parent pid and process group of a host process, or undefined once it is gone. */
export function hostStat(pid: number): { state: string; ppid: number; pgrp: number } | undefined {
  try {
    const [state, ppid, pgrp] = statFields(readFileSync(`/proc/${pid}/stat`, 'latin1'));
    return { state: state!, ppid: Number(ppid), pgrp: Number(pgrp) };
  } catch {
    return undefined;
  }
}

/** The first child of a host process, from /proc/<pid>/task/<pid>/children. */
export function firstChild(pid: number): number | undefined {
  try {
    const child = Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(' ')[0]);
    return Number.isInteger(child) && child > 0 ? child : undefined;
  } catch {
    return undefined;
  }
}
