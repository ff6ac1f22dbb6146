import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readProcStat } from '@sandstream/types/runtime';
import { closeOrphanedPipes, describeExhaustion, spawnMark } from '../exhaustion.js';
import { mountTable, removeSkeletons, skeletonFor } from './layout.js';
import type { IsolationSupport } from './probe.js';
import { groupAliveIn, holdsIn, type EnvironmentHandle } from './handle.js';
import { janitorDescriptor } from './janitor.js';
import { secureRoot, strayMountsOf } from './root-check.js';
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
  /** The grace period of the termination sequence the init runs should this process die without close(). */
  readonly graceMs: number;
}

/** Environments not yet destroyed, ended with this process on a normal exit. */
const live = new Set<Environment>();
let exitHookInstalled = false;

function endAllOnExit(): void {
  for (const environment of live) environment.endNow();
  removeSkeletons();
}

/** The environment ended, or never started: a command cannot enter it. */
export class EnvironmentGone extends Error {
  override name = 'EnvironmentGone';
}

/**
 * One sandbox's namespaces, held by a long-lived init process (pid 1 of the
 * PID namespace) that `unshare` starts; commands enter them with `nsenter`.
 * Killing the init ends the PID namespace, and the kernel kills everything
 * left in it: that is `destroy()`, the last word of `close()`.
 *
 * The init's descriptor 3 and standard output are pipes to this process.
 * Should this process die without `destroy()`, the init sees end-of-file on
 * descriptor 3, runs the termination sequence on the namespace's processes
 * and ends, and the environment with it (scripts.ts). The end of its standard output says the
 * init (and `unshare`) are gone. Nothing else ties the environment to
 * `unshare`: a stray signal to it does not end the sandbox.
 */
export class Environment implements EnvironmentHandle {
  /**
   * Resolves once the init has pivoted into the new root: a command may
   * enter the namespaces from then on, and waits for {@link ready} before
   * anything of its own runs.
   */
  readonly enterable: Promise<void>;
  /** Resolves once the filesystem is built and checked: commands may run. */
  readonly ready: Promise<void>;
  private readonly holder: ChildProcess;
  private initPidValue: number | undefined;
  private isReady = false;
  /** Resolves once the init and unshare are gone. */
  private readonly ended: Promise<void>;
  private destroying: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(readonly settings: EnvironmentSettings) {
    const { support, network, workDir, mounts, graceMs } = settings;
    // Worked out here, so the init runs as few programs as it can (layout.ts).
    const skeleton = skeletonFor(support, workDir);
    const table = mountTable(skeleton, support, workDir, network);
    const unshareArgs = [
      ...(support.via === 'user-namespace' ? ['--user', '--map-root-user'] : []),
      '--pid',
      '--fork',
      '--mount',
      '--propagation',
      'private',
      '--ipc',
      '--uts',
      ...(network ? [] : ['--net']),
    ];
    const mountArgs = mounts.flatMap((mount) => [mount.source, mount.target, mount.readonly ? 'ro' : 'rw']);
    const mark = spawnMark();
    this.holder = spawn(
      support.unshare,
      [
        ...unshareArgs,
        '--',
        '/bin/sh',
        '-c',
        INIT_SCRIPT,
        'sandstream-init',
        skeleton.path,
        network ? '0' : support.sysfsLoopback ? 'sysfs' : '1',
        table,
        String(Math.ceil(Math.min(graceMs, 2 ** 31 - 1))),
        ...mountArgs,
      ],
      {
        // Not standard input: Node.js closes a child's stdin when the child (unshare) exits.
        // Descriptor 4 holds the janitor back until the namespace has ended (janitor.ts).
        stdio: ['ignore', 'pipe', 'pipe', 'pipe', janitorDescriptor() ?? 'ignore'],
        detached: true,
        // The init's programs started before the pivot keep their working directory: the host's
        // root, which the pivot moves to the new one, not a directory of this process's.
        cwd: '/',
        env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' },
      },
    );
    const holder = this.holder;
    // Listened to at once: a spawn that failed emits 'error' on the next tick.
    const spawnError = new Promise<NodeJS.ErrnoException>((resolve) => holder.on('error', resolve));
    if (!holder.stdout || !holder.stderr || !holder.stdio?.[3]) {
      // Out of descriptors (EMFILE, ENFILE): Node.js gave the child no pipes, and only 'error' follows.
      closeOrphanedPipes(mark);
      this.ended = Promise.resolve();
      this.ready = this.enterable = spawnError.then((error) => {
        this.failure = new EnvironmentGone(`the sandbox's environment did not start: ${describeExhaustion(error) ?? error.message}`);
        throw this.failure;
      });
      this.ready.catch(() => undefined);
      return;
    }
    // Once ready, neither the environment nor its pipes keep this process
    // alive; until then they do, as a command may be waiting for it.
    const unref = (): void => {
      holder.unref();
      for (const stream of holder.stdio) (stream as unknown as { unref?(): void } | null)?.unref?.();
    };
    let stdout = '';
    let stderr = '';
    holder.stderr!.setEncoding('utf8').on('data', (text: string) => {
      // Enough to say why a start failed.
      if (stderr.length < 4096) stderr += text;
    });
    for (const stream of holder.stdio) stream?.on('error', () => undefined);
    let unshareEnd: string | undefined;
    holder.once('exit', (code, signal) => (unshareEnd = signal === null ? `exited with ${code}` : `was killed by ${signal}`));
    // The init's standard output closes when the init (and unshare) are gone.
    this.ended = new Promise((resolve) => holder.stdout!.once('close', () => resolve()));
    const closed = new Promise<void>((resolve) => holder.once('close', () => resolve()));
    let pivoted!: () => void;
    let refuseEntry!: (error: Error) => void;
    this.enterable = new Promise<void>((resolve, reject) => {
      pivoted = resolve;
      refuseEntry = reject;
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const fail = (reason: string): void => {
        this.failure = new EnvironmentGone(`the sandbox's environment did not start: ${reason}`);
        refuseEntry(this.failure);
        reject(this.failure);
      };
      void spawnError.then((error) => fail(describeExhaustion(error) ?? error.message));
      // Before any command runs: the host's root read-only, checked in the init's own mount table.
      // Checked once the init has pivoted, while it unmounts the old root (which is below /tmp, a
      // place the check leaves alone): the sandbox's other mounts are what they will be.
      const writable = mounts.filter((mount) => !mount.readonly).map((mount) => mount.target);
      let rootChecked: Promise<void> | undefined;
      const checkRoot = (pid: number): Promise<void> => {
        let strays;
        try {
          strays = strayMountsOf(pid, workDir, writable);
        } catch (error) {
          return Promise.reject(
            new Error(`its mount table could not be read (${describeExhaustion(error as NodeJS.ErrnoException) ?? (error as Error).message})`),
          );
        }
        return strays.length === 0 ? Promise.resolve() : secureRoot(pid, support, workDir, writable);
      };
      /**
       * The init has pivoted: commands may enter its namespaces from now on
       * (nsenter takes the topmost mount of / for an entered process's root,
       * the new root from here on), and wait for their go until ready. Not
       * sooner: an entry whose setns looked up the old root just before the
       * pivot and set it just after kept the host's root (a command then found
       * no /workspace, twice in one CI run).
       */
      const pivotedNow = (): void => {
        const found = holder.pid === undefined ? {} : readFirstChild(holder.pid);
        const pid = found.pid;
        if (pid === undefined) {
          const exhausted = found.error === undefined ? undefined : describeExhaustion(found.error);
          return fail(`its init process could not be found${exhausted === undefined ? '' : ` (${exhausted})`}`);
        }
        this.initPidValue = pid;
        rootChecked = checkRoot(pid);
        rootChecked.catch(() => undefined);
        pivoted();
      };
      const readyNow = (pid: number): void => {
        const done = (): void => {
          if (this.failure !== undefined) return;
          this.isReady = true;
          unref();
          resolve();
        };
        (rootChecked ?? checkRoot(pid)).then(done, (error: Error) => fail(error.message));
      };
      // unshare keeps the pipe open: the lines, not end-of-file, say pivoted and ready.
      holder.stdout!.setEncoding('utf8').on('data', (text: string) => {
        stdout += text;
        for (let newline = stdout.indexOf('\n'); newline >= 0; newline = stdout.indexOf('\n')) {
          const line = stdout.slice(0, newline);
          stdout = stdout.slice(newline + 1);
          if (this.failure !== undefined) return;
          if (line === 'ending') {
            // Its pipe from this process was closed under it: it is ending the namespace.
            this.failure = new EnvironmentGone("the sandbox's environment has ended (its init lost its pipe to this process)");
            return;
          }
          if (line === 'pivoted' && this.initPidValue === undefined) pivotedNow();
          else if (line === 'ready') {
            if (this.initPidValue === undefined) pivotedNow();
            if (this.initPidValue !== undefined) readyNow(this.initPidValue);
          }
        }
      });
      void this.ended.then(() => {
        if (this.isReady) {
          this.failure ??= new EnvironmentGone(
            `the sandbox's environment has ended${unshareEnd === undefined ? '' : ` (unshare ${unshareEnd})`}`,
          );
          return;
        }
        // Before ready: what unshare or the init said, once all of it was read.
        void closed.then(() => fail(stderr.trim() || `unshare ${unshareEnd ?? 'ended'}`));
      });
    });
    // A failure is reported to each command that tries to enter, not as an unhandled rejection.
    this.enterable.catch(() => undefined);
    this.ready.catch(() => undefined);
    live.add(this);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on('exit', endAllOnExit);
    }
  }

  /**
   * Synchronously ends the environment: for this process's exit, when
   * nothing can be awaited. (Were this process killed instead, the init
   * sees its input end and ends the environment, and the janitor removes
   * the process's root skeleton, janitor.ts.)
   */
  endNow(): void {
    live.delete(this);
    const init = this.initPidValue ?? (this.holder.pid === undefined ? undefined : firstChild(this.holder.pid));
    for (const pid of [init, this.holder.pid === undefined ? undefined : -this.holder.pid]) {
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  /** Whether the environment shares the host's network namespace. */
  get network(): boolean {
    return this.settings.network;
  }

  /** The init's pid on the host, once it has pivoted. */
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
    return init !== undefined && groupAliveIn(init, pgid);
  }

  /**
   * Whether a process of the sandbox holds `target` (a `/proc/<pid>/fd`
   * link text such as `socket:[123]`) open. `nsenter`, which holds every
   * pipe of the command it waits for, is on the host and not counted.
   */
  holds(target: string): boolean {
    const init = this.initPidValue;
    return init !== undefined && this.destroying === undefined && holdsIn(init, target);
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
      for (const stream of this.holder.stdio ?? []) (stream as unknown as { ref?(): void } | null)?.ref?.();
      // Not waiting for a start that may never finish: an init still building
      // the filesystem is killed as well.
      const init = this.initPidValue ?? (this.holder.pid === undefined ? undefined : firstChild(this.holder.pid));
      for (const pid of [init, this.holder.pid === undefined ? undefined : -this.holder.pid]) {
        try {
          if (pid !== undefined) process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      // And should the init have been between fork and exec: its lifeline ends too.
      this.holder.stdio?.[3]?.destroy();
      await this.ended;
      // Normally unshare, which outlives the namespace, closed the pipe last. Were it killed
      // earlier, the init's own close comes first, while the kernel still ends the rest: wait
      // for the init to be a zombie, which it becomes once its namespace is empty.
      for (let delay = 1; init !== undefined && !hostGone(init); delay = Math.min(delay * 2, 50)) {
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
      // The skeleton stays for the sandboxes to come: it goes at exit (janitor.ts).
      live.delete(this);
    })();
    return this.destroying;
  }
}

/** The state, parent pid and process group of a host process, or undefined once it is gone. */
export function hostStat(pid: number): { state: string; ppid: number; pgrp: number } | undefined {
  return readProcStat(pid);
}

/** True once a host process is gone or a zombie. */
function hostGone(pid: number): boolean {
  const state = hostStat(pid)?.state;
  return state === undefined || state === 'Z' || state === 'X';
}

/** The first child of a host process, from /proc/<pid>/task/<pid>/children. */
export function firstChild(pid: number): number | undefined {
  return readFirstChild(pid).pid;
}

/** {@link firstChild}, with the error that kept it from being read (EMFILE, say). */
export function readFirstChild(pid: number): { pid?: number; error?: NodeJS.ErrnoException } {
  try {
    const child = Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(' ')[0]);
    return Number.isInteger(child) && child > 0 ? { pid: child } : {};
  } catch (error) {
    return { error: error as NodeJS.ErrnoException };
  }
}
