/**
 * Lowers and lifts this process's own limits. Node.js cannot set its
 * limits, and raises the descriptor limit to the hard one at its start (so
 * a limit given to it before it starts does not hold): util-linux's
 * prlimit sets them on this process's pid, run by a helper shell started
 * before any limit is lowered.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { findExecutable, limitOf } from './executables.js';
import { tasksByUid } from './other-uid.js';

/** Limits of {@link limitSelf}; each undefined one is left as it is. */
export interface HostLimits {
  /** RLIMIT_NOFILE's soft limit. */
  readonly openFiles?: number;
  /** Tasks (processes and threads) this uid may add to those it owns now: RLIMIT_NPROC's soft limit. */
  readonly processes?: number;
}

/** The limits {@link limitSelf} set, absolute. */
export interface LimitsSet {
  /** RLIMIT_NOFILE's soft limit. */
  openFiles?: number;
  /** RLIMIT_NPROC's soft limit: the tasks the uid owned plus those allowed. */
  processes?: number;
}

/**
 * The helper that runs prlimit on this process: a shell started before any
 * limit is lowered, so it keeps this host's limits and can raise this
 * process's back even when this process has no descriptor left to start
 * anything (the request and its answer go through pipes already open).
 */
interface Helper {
  readonly child: ChildProcessByStdio<Writable, Readable, null>;
  request(args: readonly string[]): Promise<void>;
}

let helper: Helper | undefined;
/** The hard limits, read before any was lowered (reading them later needs a descriptor). */
let hardLimits: { openFiles: string; processes: string } | undefined;

function startHelper(prlimit: string): Helper {
  const child = spawn('/bin/sh', ['-c', 'while read -r args; do if "$0" --pid "$1" $args 2>&1; then echo ok; else echo failed; fi; done', prlimit, String(process.pid)], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let text = '';
  let said = '';
  const waiters: Array<(error?: Error) => void> = [];
  child.stdout.setEncoding('utf8').on('data', (data: string) => {
    text += data;
    for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n')) {
      const line = text.slice(0, newline);
      text = text.slice(newline + 1);
      if (line === 'ok' || line === 'failed') waiters.shift()?.(line === 'ok' ? undefined : new Error(`prlimit failed: ${said.trim()}`));
      else said = `${said}${line}\n`;
    }
  });
  child.once('error', (error) => waiters.splice(0).forEach((settle) => settle(error)));
  child.once('close', () => waiters.splice(0).forEach((settle) => settle(new Error('the prlimit helper ended'))));
  return {
    child,
    request(args) {
      return new Promise((resolve, reject) => {
        said = '';
        waiters.push((error) => (error === undefined ? resolve() : reject(error)));
        child.stdin.write(`${args.join(' ')}\n`);
      });
    },
  };
}

/** Why {@link limitSelf} cannot work in this process, or undefined. */
export function limitSelfUnavailable({ processes }: HostLimits = {}): string | undefined {
  if (findExecutable('prlimit') === undefined) return 'util-linux prlimit is not installed';
  if (processes !== undefined && process.getuid?.() === 0) return 'root is exempt from the process limit (start it through asUnusedUid)';
  return undefined;
}

/**
 * Lowers this process's soft limits, through prlimit on its own pid, run by
 * a helper shell started first and kept until {@link liftSelfLimits} (call
 * it before the end). `openFiles`: RLIMIT_NOFILE; `processes`:
 * RLIMIT_NPROC, as that many tasks above those this uid owns now (the limit
 * counts every task of the uid, threads included). The hard limits stay, so
 * {@link liftSelfLimits} can raise them back, and what this process started
 * before keeps its own. Resolves with the limits set; throws with the
 * reason {@link limitSelfUnavailable} gives.
 *
 * @example
 * ```ts
 * await limitSelf({ openFiles: 160 }); // then start more commands than fit
 * ```
 */
export async function limitSelf(limits: HostLimits = {}): Promise<LimitsSet> {
  const unavailable = limitSelfUnavailable(limits);
  if (unavailable !== undefined) throw new Error(unavailable);
  const args: string[] = [];
  const set: LimitsSet = {};
  if (limits.openFiles !== undefined) {
    args.push(`--nofile=${limits.openFiles}:`);
    set.openFiles = limits.openFiles;
  }
  if (limits.processes !== undefined) {
    set.processes = (tasksByUid().get(process.getuid?.() ?? -1) ?? 0) + limits.processes;
    args.push(`--nproc=${set.processes}:`);
  }
  hardLimits ??= { openFiles: limitOf('Max open files').hard, processes: limitOf('Max processes').hard };
  helper ??= startHelper(findExecutable('prlimit')!);
  if (args.length > 0) await helper.request(args);
  return set;
}

/**
 * Raises this process's soft limits of descriptors and processes back to
 * the hard ones, through the helper {@link limitSelf} started (so it works
 * while this process has no descriptor left), and ends the helper. Nothing
 * to do when {@link limitSelf} was not called.
 */
export async function liftSelfLimits(): Promise<void> {
  if (helper === undefined || hardLimits === undefined) return;
  const current = helper;
  helper = undefined;
  try {
    await current.request([`--nofile=${hardLimits.openFiles}:`, `--nproc=${hardLimits.processes}:`]);
  } finally {
    current.child.stdin.end();
  }
}

/** This process's soft limits of descriptors and processes (`unlimited` or a number, as text). */
export function softLimits(): { readonly openFiles: string; readonly processes: string } {
  return { openFiles: limitOf('Max open files').soft, processes: limitOf('Max processes').soft };
}
