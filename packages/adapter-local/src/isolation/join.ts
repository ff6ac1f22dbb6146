/**
 * An environment made by another process (or another sandbox of this one),
 * joined by its init's host pid: commands enter it as they enter one of
 * this process's, and this process neither holds it up nor ends it.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { readProcStat } from '@sandstream/types/runtime';
import type { IsolatedMount } from './environment.js';
import { EnvironmentGone } from './environment.js';
import { groupAliveIn, holdsIn, type EnvironmentHandle } from './handle.js';

/** How long a join waits for an environment still being built to be ready. */
const READY_WITHIN_MS = 30_000;
const POLL_MAX_MS = 50;

/** The text of a link in /proc, or undefined where it cannot be read. */
function link(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

/** Why `pid` is not an isolated sandbox's init this process can join, or its arguments after `sandstream-init`. */
function initArguments(pid: number): string[] | string {
  let args: string[];
  try {
    args = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0');
  } catch {
    return `no process ${pid} runs that this process can see`;
  }
  const at = args.indexOf('sandstream-init');
  if (at < 0 || args[at - 2] !== '-c') return `process ${pid} is not an isolated sandbox's init`;
  if (link(`/proc/${pid}/root`) === undefined || link(`/proc/${pid}/ns/pid`) === undefined) {
    return `this process may not look into the environment of process ${pid} (another account's?)`;
  }
  return args.slice(at + 1);
}

/**
 * The environment whose init runs as host pid `init`. Its namespaces are
 * read from the init: a user namespace is entered where it is not this
 * process's, a network namespace where the init was given one of its own. It is ready
 * once the init has closed its descriptor 3, which it does right after it
 * reported ready (scripts.ts); it is gone once the init is, or once its
 * number belongs to another process.
 */
export class JoinedEnvironment implements EnvironmentHandle {
  readonly enterable: Promise<void>;
  readonly ready: Promise<void>;
  /** How the environment was made: in a user namespace of its own, or as root. */
  readonly via: 'root' | 'user-namespace';
  readonly network: boolean;
  /** Its work directory and the extra mounts its init was given. */
  readonly mounts: readonly IsolatedMount[];
  private readonly startTicks: number;

  /** @throws Error naming why `init` cannot be joined. */
  constructor(readonly init: number) {
    const args = initArguments(init);
    const startTicks = readProcStat(init)?.startTicks;
    if (typeof args === 'string') throw new Error(args);
    if (startTicks === undefined) throw new Error(`process ${init} is gone`);
    this.startTicks = startTicks;
    this.via = link(`/proc/${init}/ns/user`) === link('/proc/self/ns/user') ? 'root' : 'user-namespace';
    // Its loopback parameter: 0 where it shares the host's network.
    this.network = args[1] === '0';
    const mounts: IsolatedMount[] = [];
    for (let i = 4; i + 2 < args.length; i += 3) mounts.push({ source: args[i]!, target: args[i + 1]!, readonly: args[i + 2] === 'ro' });
    this.mounts = mounts;
    this.ready = this.enterable = this.untilReady();
    this.ready.catch(() => undefined);
  }

  private async untilReady(): Promise<void> {
    const deadline = performance.now() + READY_WITHIN_MS;
    for (let delay = 1; link(`/proc/${this.init}/fd/3`) !== undefined; delay = Math.min(delay * 2, POLL_MAX_MS)) {
      const gone = this.gone;
      if (gone !== undefined) throw gone;
      if (performance.now() > deadline) throw new EnvironmentGone(`the sandbox's environment (init ${this.init}) was not ready within ${READY_WITHIN_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    const gone = this.gone;
    if (gone !== undefined) throw gone;
  }

  private alive(): boolean {
    const stat = readProcStat(this.init);
    return stat !== undefined && stat.startTicks === this.startTicks && stat.state !== 'Z' && stat.state !== 'X';
  }

  get initPid(): number | undefined {
    return this.alive() ? this.init : undefined;
  }

  get gone(): Error | undefined {
    return this.alive() ? undefined : new EnvironmentGone(`the sandbox's environment (init ${this.init}) has ended`);
  }

  groupAlive(pgid: number): boolean {
    return groupAliveIn(this.init, pgid);
  }

  holds(target: string): boolean {
    return this.alive() && holdsIn(this.init, target);
  }
}
