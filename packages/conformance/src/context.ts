import type { ExecResult, Sandbox, SandboxFactory } from '@sandstream/types';
import { ConformanceFailure, describeError, HarnessError } from './assert.js';

/** What a case gets: a fresh sandbox and helpers that work through it. */
export interface CaseContext {
  /** A fresh sandbox from the adapter's factory; the engine closes it. */
  readonly sandbox: Sandbox;
  /** The adapter's factory, for cases that need a second sandbox. */
  readonly factory: SandboxFactory;
  /** The adapter's SIGTERM-to-SIGKILL grace period, as the run options declare it. */
  readonly graceMs: number;
  /** Aborts when the case times out; long waits should honour it. */
  readonly signal: AbortSignal;
  /** A scratch directory inside the sandbox, removed after the case. */
  scratch(): Promise<string>;
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

// A process is alive when /proc says it is not a zombie (and, given a token,
// its command line contains it); where there is no /proc, `kill -0` is the
// fallback (zombies then count as alive, and the token is not checked).
const ALIVE_SCRIPT = [
  // Exit 2: the sandbox lacks what the probe needs, so nothing can be concluded.
  'for tool in sed cut tr grep kill; do command -v "$tool" >/dev/null 2>&1 || exit 2; done',
  'if [ -r "/proc/$1/stat" ]; then',
  '  s=$(sed -e "s/^.*) //" "/proc/$1/stat" 2>/dev/null | cut -c1)',
  '  [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ] || exit 1',
  '  [ -z "$2" ] || tr "\\000" " " < "/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"',
  'else kill -0 "$1" 2>/dev/null; fi',
].join('\n');

/** Builds the context of one case around its sandbox. */
export function createContext(
  sandbox: Sandbox,
  factory: SandboxFactory,
  graceMs: number,
  signal: AbortSignal,
): { ctx: CaseContext; cleanup(): Promise<void> } {
  const dirs: string[] = [];

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

  const exec = async (argv: readonly string[]): Promise<ExecResult> => {
    // A case that timed out may still be running; it must not start anything more.
    if (signal.aborted) throw new HarnessError('the case has ended');
    try {
      return await sandbox.run(argv, { timeout: 10_000 });
    } catch (error) {
      // run() of a plain command is required behaviour: its failure is the adapter's.
      throw new ConformanceFailure(`run() failed on the helper command ${JSON.stringify(argv)}: ${describeError(error)}`);
    }
  };

  const isAlive = async (pid: number, token = ''): Promise<boolean> => {
    const result = await exec(['sh', '-c', ALIVE_SCRIPT, 'sh', String(pid), token]);
    if (result.exitCode !== 0 && result.exitCode !== 1) {
      throw new HarnessError(`the sandbox cannot run the liveness probe (exit ${result.exitCode}): it needs sh, sed, cut, tr, grep and kill`);
    }
    return result.exitCode === 0;
  };

  const poll = async <T>(read: () => Promise<T | undefined>, withinMs: number, what: string): Promise<T> => {
    const deadline = performance.now() + withinMs;
    for (;;) {
      const value = await read();
      if (value !== undefined) return value;
      if (performance.now() > deadline) throw new ConformanceFailure(`${what} (waited ${withinMs} ms)`);
      await sleep(25);
    }
  };

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
    async timeoutFor(atLeast) {
      roundTrip ??= measureRoundTrip();
      return Math.max(atLeast, Math.ceil(5 * (await roundTrip)));
    },
    factory,
    graceMs,
    signal,
    sleep,
    exec,
    isAlive,
    poll,
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
    async expectGone(pids, withinMs, what, token) {
      const deadline = performance.now() + withinMs;
      for (;;) {
        const alive: number[] = [];
        for (const pid of pids) if (await isAlive(pid, token)) alive.push(pid);
        if (alive.length === 0) return;
        if (performance.now() > deadline) {
          throw new ConformanceFailure(`${what}: pid ${alive.join(', ')} still running ${withinMs} ms later`);
        }
        await sleep(25);
      }
    },
  };

  return {
    ctx,
    async cleanup() {
      for (const dir of dirs) {
        await sandbox.run(['rm', '-rf', dir], { timeout: 10_000 }).catch(() => undefined);
      }
    },
  };
}
