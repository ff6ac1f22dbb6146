/**
 * Adapters for the two topologies the kit must judge `teardown.close` on:
 *
 * - a shared host, where every sandbox's processes are visible from every
 *   other (the local adapter as it is);
 * - an isolated backend, where each sandbox is its own environment: here
 *   the local adapter with every command of a sandbox entered into that
 *   sandbox's own PID namespace (`unshare --pid --fork --mount-proc` makes
 *   it, `nsenter` enters it), so a second sandbox cannot see the first's
 *   processes, and pids are the namespace's.
 *
 * Each comes correct or with a `close()` that leaks: it reports every
 * command ended (results resolve, `exited` is true) while the commands run
 * on, as a remote adapter that drops its connection without killing
 * anything would. The attach hook gives a second handle on a sandbox's
 * namespace, as an adapter module would export it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createExecResult, SandboxClosed, type ExecResult, type OutputChunk, type Sandbox } from '@sandstream/types';
import type { ConformanceHooks } from '../../src/index.js';
import type { Lab } from './lab.js';
import { wrapSandbox, type ProcessDefects } from './wrap.js';

/** Whether this machine lets us make PID namespaces (root, or unprivileged user namespaces). */
export function canMakePidNamespaces(): boolean {
  return spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore' }).status === 0;
}

/** A PID namespace with its own /proc, kept alive by an idle init. */
export class PidNamespace {
  private constructor(
    /** The host pid of the namespace's init (pid 1 inside). */
    readonly init: number,
    private readonly holder: ReturnType<typeof spawn>,
  ) {}

  static async create(lab: Lab): Promise<PidNamespace> {
    // The lab's marker is in the environment, so the lab's cleanup finds everything inside.
    const holder = spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', 'sleep', 'infinity'], {
      env: lab.env(),
      stdio: 'ignore',
    });
    const exited = new Promise<never>((_, reject) => {
      holder.once('error', reject);
      holder.once('exit', (code) => reject(new Error(`unshare exited ${code}: this machine cannot make PID namespaces`)));
    });
    exited.catch(() => undefined);
    const unshare = holder.pid!;
    // unshare forks the namespace's init once the namespace exists; wait for it to appear.
    for (;;) {
      await Promise.race([sleep(5), exited]);
      const children = readFileSync(`/proc/${unshare}/task/${unshare}/children`, 'utf8').trim();
      if (children === '') continue;
      const init = Number(children.split(/\s+/)[0]);
      // Not in our namespace: its /proc is mounted once `sleep` runs as pid 1.
      if (readlinkSync(`/proc/${init}/ns/pid`) === readlinkSync('/proc/self/ns/pid')) continue;
      if (!readFileSync(`/proc/${init}/cmdline`, 'utf8').startsWith('sleep')) continue;
      return new PidNamespace(init, holder);
    }
  }

  /** `argv` run inside the namespace, in `cwd` (entering a mount namespace resets it). */
  enter(argv: readonly string[], options: { cwd?: unknown } | undefined): readonly string[] {
    // Malformed arguments reach the adapter untouched, for it to refuse.
    if (!Array.isArray(argv) || argv.length === 0) return argv;
    const cwd = resolve(process.cwd(), typeof options?.cwd === 'string' ? options.cwd : '.');
    return ['nsenter', `--target=${this.init}`, '--pid', '--mount', `--wd=${cwd}`, '--', ...argv];
  }

  /** Kills the namespace's init, which kills everything inside; resolves once it is gone. */
  async destroy(): Promise<void> {
    if (this.holder.exitCode !== null || this.holder.signalCode !== null) return;
    const gone = new Promise((r) => this.holder.once('exit', r));
    try {
      process.kill(this.init, 'SIGKILL');
    } catch {
      // already gone
    }
    await gone;
  }
}

/** Ended results a leaking close() makes up for commands it leaves running. */
function madeUpResult(streamed: boolean): ExecResult {
  return createExecResult({ exitCode: null, signal: 'SIGKILL', streamed });
}

/**
 * What makes a Process report itself ended once `leaked` fires, while its
 * command runs on: `exited`, end of output, a made-up result, and a kill or
 * disposal that does nothing.
 */
function leakingProcess(leaked: Promise<void>): ProcessDefects {
  let ended = false;
  void leaked.then(() => (ended = true));
  const done = leaked.then((): IteratorResult<OutputChunk, undefined> => ({ done: true, value: undefined }));
  return {
    exited: (inner) => ended || inner.exited,
    iterator(inner) {
      const source = inner[Symbol.asyncIterator]();
      return {
        next: () => (ended ? done : Promise.race([source.next(), done])),
        return: async () => (ended ? { done: true, value: undefined } : source.return!()),
      };
    },
    wait(inner) {
      const made = leaked.then(() => madeUpResult(true));
      return ended ? made : Promise.race([inner.wait(), made]);
    },
    kill: (inner, signal) => (ended ? Promise.resolve() : inner.kill(signal)),
    dispose: (inner) => (ended ? Promise.resolve() : inner[Symbol.asyncDispose]()),
  };
}

/**
 * The inner Processes of leaking sandboxes, held for good. A command a remote
 * adapter leaked runs on whatever becomes of the caller's objects; without
 * this, the local runtime's teardown of a garbage-collected Process ended a
 * leaked command before the kit's sweep found it, and the sweep's count
 * depended on when V8 collected (seen under load: 2 killed instead of 3).
 */
const leakedProcesses = new Set<unknown>();

/** How a topology sandbox's close() behaves. */
export type CloseBehaviour =
  /** Terminates the commands, and destroys the namespace when there is one (the adapter owns it). */
  | 'owns-environment'
  /** Terminates the commands and leaves the namespace to live on (an environment the adapter does not own). */
  | 'keeps-environment'
  /** Reports every command ended but terminates nothing (the defect). */
  | 'leaks';

/** The local adapter, optionally inside `namespace`, with the given close(). */
export function topologySandbox(lab: Lab, namespace: PidNamespace | undefined, behaviour: CloseBehaviour): Sandbox {
  const enter = (argv: readonly string[], options: { cwd?: unknown } | undefined): readonly string[] =>
    namespace === undefined ? argv : namespace.enter(argv, options);
  let leak!: () => void;
  const leaked = new Promise<void>((r) => (leak = r));
  let closing: Promise<void> | undefined;
  return wrapSandbox(lab.local(), {
    name: namespace === undefined ? 'local' : 'local-in-pid-namespace',
    run(inner, argv, options) {
      if (closing !== undefined) return Promise.reject(new SandboxClosed());
      const running = inner.run(enter(argv, options), options);
      return behaviour === 'leaks' ? Promise.race([running, leaked.then(() => madeUpResult(false))]) : running;
    },
    stream(inner, argv, options) {
      if (closing !== undefined) throw new SandboxClosed();
      const proc = inner.stream(enter(argv, options), options);
      if (behaviour === 'leaks') leakedProcesses.add(proc);
      return proc;
    },
    ...(behaviour === 'leaks' ? { process: leakingProcess(leaked) } : {}),
    close(inner) {
      closing ??= (async () => {
        if (behaviour === 'leaks') return leak();
        await inner.close();
        if (behaviour === 'owns-environment') await namespace?.destroy();
      })();
      return closing;
    },
  });
}

/** The namespace of each isolated sandbox, for the attach hook. */
const namespaces = new WeakMap<Sandbox, PidNamespace>();

/** A factory of isolated sandboxes: each call makes a PID namespace of its own. */
export function isolatedFactory(lab: Lab, behaviour: CloseBehaviour): () => Promise<Sandbox> {
  return async () => {
    const namespace = await PidNamespace.create(lab);
    const sandbox = topologySandbox(lab, namespace, behaviour);
    namespaces.set(sandbox, namespace);
    return sandbox;
  };
}

/**
 * The attach hook an isolated adapter module would export: a handle whose
 * commands enter the same namespace, and whose close() leaves it alone.
 */
export function isolatedHooks(lab: Lab): ConformanceHooks {
  return {
    async attach(sandbox) {
      const namespace = namespaces.get(sandbox);
      if (namespace === undefined) throw new Error('not a sandbox of this adapter');
      return topologySandbox(lab, namespace, 'keeps-environment');
    },
  };
}
