import { randomUUID } from 'node:crypto';
import type { ExecResult, Sandbox, SandboxFactory } from '@sandstream/types';
import { ConformanceFailure, describeError, HarnessError } from './assert.js';
import type { ConformanceHooks } from './hooks.js';
import type { OwnerLauncher } from './owner-launcher.js';
import { killMarked, probeAlive, type Exec } from './sandbox-scripts.js';
import type { Termination } from './termination-settings.js';

/** What a case gets: a fresh sandbox and helpers that work through it. */
export interface CaseContext {
  /** A fresh sandbox from the adapter's factory; the engine closes it. */
  readonly sandbox: Sandbox;
  /** The adapter's factory, for cases that need a second sandbox. */
  readonly factory: SandboxFactory;
  /**
   * The adapter module's `attach` hook, when it exports one: a second handle
   * on the environment of a sandbox, to observe it after that sandbox's close().
   */
  readonly attach: ConformanceHooks['attach'];
  /** The adapter module's `sever` hook, if it has one (spec 1.2, `attach.link-lost`). */
  readonly sever: ConformanceHooks['sever'];
  /** The adapter module's `owner` hook, if it has one (spec 1.4, `owner.crash`). */
  readonly owner: ConformanceHooks['owner'];
  /** The run's `ownerModule` option: the module an owner process loads (spec 1.4, `owner.crash`). */
  readonly ownerModule: string | undefined;
  /** How a run through a testee starts an owner process: a second testee (spec 1.4 section 18.6). */
  readonly launchOwner: OwnerLauncher | undefined;
  /** The termination settings this case's sandbox states (or the fallback), and where they came from. */
  readonly termination: Termination;
  /** The SIGTERM-to-SIGKILL grace period: `termination.graceMs`. */
  readonly graceMs: number;
  /** The wait for an exit report after SIGKILL: `termination.killWaitMs`. */
  readonly killWaitMs: number;
  /** Aborts when the case times out; long waits should honour it. */
  readonly signal: AbortSignal;
  /** A scratch directory inside the sandbox, removed after the case. Its path is a token of the case. */
  scratch(): Promise<string>;
  /**
   * A fresh string to put in the argv of commands the case starts. After a
   * failed case the kit kills, best effort, every process carrying one of the
   * case's tokens (scratch directories count).
   */
  token(label: string): string;
  /**
   * SIGKILLs, through {@link exec}, every process carrying one of the case's
   * tokens (scratch directories count), and returns their pids; never throws.
   * For a case whose verdict is already a failure, before it throws: a
   * Process the adapter holds back behind one of them (a start retried while
   * the first attempt runs on) then settles, and the case's disposal need
   * not wait out the termination budget of a start never confirmed.
   */
  endMarked(): Promise<number[]>;
  /** Runs a helper command through the sandbox; a failure to run it is a harness error. */
  exec(argv: readonly string[]): Promise<ExecResult>;
  /** Reads a file inside the sandbox, or undefined when it does not exist. */
  readFile(path: string): Promise<string | undefined>;
  /**
   * Whether a pid is a live (non-zombie) process inside the sandbox. With
   * `token`, only a process whose command line contains it counts, so a
   * reused pid, or one in another sandbox, is never mistaken for the command.
   */
  isAlive(pid: number, token?: string): Promise<boolean>;
  /**
   * Waits until none of `pids` is alive, failing with `what` after `withinMs`.
   * `token` is passed to {@link isAlive}: a string in the commands' argv.
   */
  expectGone(pids: readonly number[], withinMs: number, what: string, token?: string): Promise<void>;
  /** Polls `read` until it returns a value, failing with `what` after `withinMs`. */
  poll<T>(read: () => Promise<T | undefined>, withinMs: number, what: string): Promise<T>;
  /** Resolves after `ms`, or rejects when the case is aborted. */
  sleep(ms: number): Promise<void>;
  /**
   * A timeout that leaves a command on this backend time to start and print
   * before it fires: `atLeast`, or several round trips of a trivial command
   * if the backend is slower.
   */
  timeoutFor(atLeast: number): Promise<number>;
}

/** What the engine keeps of a context besides the case's view. */
export interface ContextHandle {
  readonly ctx: CaseContext;
  /** Removes the scratch directories. */
  cleanup(): Promise<void>;
  /** The case's tokens (scratch directories included), for the sweep after a failure. */
  tokens(): readonly string[];
  /** Whether the case read the termination settings (so a failure message names them). */
  usedTermination(): boolean;
  /** The bounded waits (`poll`, `expectGone`) in progress, oldest first: a case at its limit names them. */
  waits(): readonly ActiveWait[];
}

/** A bounded wait of a case in progress. */
export interface ActiveWait {
  /** What the wait fails with once its bound has passed. */
  readonly what: string;
  /** Its bound. */
  readonly withinMs: number;
  /** When it began (`performance.now()`). */
  readonly since: number;
}

/** Runs `argv` as a helper through `sandbox`: a rejected run() of a plain command is the adapter's failure. */
export function helperExec(sandbox: Sandbox, signal?: AbortSignal): Exec {
  return async (argv) => {
    // A case that timed out may still be running; it must not start anything more.
    if (signal?.aborted) throw new HarnessError('the case has ended');
    try {
      return await sandbox.run(argv, { timeout: 10_000 });
    } catch (error) {
      throw new ConformanceFailure(`run() failed on the helper command ${JSON.stringify(argv)}: ${describeError(error)}`);
    }
  };
}

/** Builds the context of one case around its sandbox. */
export function createContext(
  sandbox: Sandbox,
  setup: { factory: SandboxFactory; termination: Termination; signal: AbortSignal; hooks: ConformanceHooks; ownerModule?: string | undefined; launchOwner?: OwnerLauncher | undefined },
): ContextHandle {
  const { factory, termination, signal, hooks, ownerModule, launchOwner } = setup;
  const dirs: string[] = [];
  const tokens: string[] = [];
  let terminationRead = false;

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });

  const active = new Set<ActiveWait>();
  /** Runs a bounded wait, known as active meanwhile. */
  const waiting = async <T>(what: string, withinMs: number, body: (deadline: number) => Promise<T>): Promise<T> => {
    const wait: ActiveWait = { what, withinMs, since: performance.now() };
    active.add(wait);
    try {
      return await body(wait.since + withinMs);
    } finally {
      active.delete(wait);
    }
  };

  const exec = helperExec(sandbox, signal);
  const isAlive = (pid: number, token = ''): Promise<boolean> => probeAlive(exec, pid, token);

  const poll = <T>(read: () => Promise<T | undefined>, withinMs: number, what: string): Promise<T> =>
    waiting(what, withinMs, async (deadline) => {
      for (;;) {
        const value = await read();
        if (value !== undefined) return value;
        if (performance.now() > deadline) throw new ConformanceFailure(`${what} (waited ${withinMs} ms)`);
        await sleep(25);
      }
    });

  let roundTrip: Promise<number> | undefined;
  const measureRoundTrip = async (): Promise<number> => {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await exec(['sh', '-c', 'echo ready']);
      times.push(performance.now() - started);
    }
    return times.sort((a, b) => a - b)[1]!;
  };

  const ctx: CaseContext = {
    sandbox,
    factory,
    attach: hooks.attach?.bind(hooks),
    sever: hooks.sever?.bind(hooks),
    owner: hooks.owner?.bind(hooks),
    ownerModule,
    launchOwner,
    get termination() {
      terminationRead = true;
      return termination;
    },
    get graceMs() {
      terminationRead = true;
      return termination.graceMs;
    },
    get killWaitMs() {
      terminationRead = true;
      return termination.killWaitMs;
    },
    signal,
    async timeoutFor(atLeast) {
      roundTrip ??= measureRoundTrip();
      return Math.max(atLeast, Math.ceil(5 * (await roundTrip)));
    },
    sleep,
    exec,
    isAlive,
    poll,
    async endMarked() {
      return (await killMarked(exec, [...tokens, ...dirs]).catch(() => undefined)) ?? [];
    },
    token(label) {
      const token = `sandstream-${label.replace(/[^a-z0-9-]/gi, '-')}-${randomUUID()}`;
      tokens.push(token);
      return token;
    },
    async scratch() {
      const result = await exec(['mktemp', '-d']);
      const dir = result.stdoutText.trim();
      if (result.exitCode !== 0 || dir === '') {
        throw new HarnessError(`mktemp -d failed in the sandbox: ${result.stderrText.trim()}`);
      }
      dirs.push(dir);
      return dir;
    },
    async readFile(path) {
      const result = await exec(['sh', '-c', '[ -f "$1" ] && cat "$1"', 'sh', path]);
      return result.exitCode === 0 ? result.stdoutText : undefined;
    },
    expectGone: (pids, withinMs, what, token) =>
      waiting(`${what}: pid ${pids.join(', ')} still running`, withinMs, async (deadline) => {
        for (;;) {
          const alive: number[] = [];
          for (const pid of pids) if (await isAlive(pid, token)) alive.push(pid);
          if (alive.length === 0) return;
          if (performance.now() > deadline) {
            throw new ConformanceFailure(`${what}: pid ${alive.join(', ')} still running ${withinMs} ms later`);
          }
          await sleep(25);
        }
      }),
  };

  return {
    ctx,
    tokens: () => [...tokens, ...dirs],
    usedTermination: () => terminationRead,
    waits: () => [...active],
    async cleanup() {
      for (const dir of dirs) {
        await sandbox.run(['rm', '-rf', dir], { timeout: 10_000 }).catch(() => undefined);
      }
    },
  };
}
