// Runs the supervisor for real under a given shell, the way a backend
// would: one process whose standard output and error are pipes, with the
// reports cut out of standard error as they arrive.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isLive, killEach, markedProcesses, procStat } from '@sandstream/test-support/processes';
import { ReportSplitter, SUPERVISOR, SUPERVISOR_NAME, TAG_VARIABLE, supervisorArgv, type SupervisorLease, type SupervisorReport } from '../src/index.js';

export interface Shell {
  readonly name: string;
  /** The shell's path, or undefined when this machine lacks it. */
  readonly path: string | undefined;
}

function firstExisting(...paths: string[]): string | undefined {
  return paths.find((p) => existsSync(p));
}

const busybox = firstExisting('/usr/bin/busybox', '/bin/busybox');
// busybox runs the applet its argv[0] names: an `ash` link makes `$0`-free `ash -c` work. The link
// is made once in the package's ignored cache and kept: the fast loop's files share this module, and
// a test worker can end without running exit handlers, so a per-file or per-process temporary
// directory was left behind.
const linkDir = fileURLToPath(new URL('../node_modules/.cache/sandstream-shells/', import.meta.url));
let ash: string | undefined;
if (busybox !== undefined) {
  ash = join(linkDir, 'ash');
  mkdirSync(linkDir, { recursive: true });
  // Another worker may make it at the same moment; a link left to another busybox is made again.
  if (!existsSync(ash) || readlinkSync(ash) !== busybox) {
    const made = join(linkDir, `ash.${process.pid}`);
    rmSync(made, { force: true });
    symlinkSync(busybox, made);
    renameSync(made, ash);
  }
}

export const SHELLS: readonly Shell[] = [
  { name: 'dash', path: firstExisting('/usr/bin/dash', '/bin/dash') },
  { name: 'bash', path: firstExisting('/usr/bin/bash', '/bin/bash') },
  { name: 'busybox ash', path: ash },
];

/**
 * The shells the shell tests run under: all of {@link SHELLS}, or dash alone
 * in the fast loop (`npm run test:fast`), which says so once per file.
 */
export const TESTED_SHELLS: readonly Shell[] = process.env['SANDSTREAM_TEST_LOOP'] === 'fast' ? SHELLS.slice(0, 1) : SHELLS;
if (TESTED_SHELLS.length < SHELLS.length) {
  console.info(`the fast loop runs the shell tests under ${TESTED_SHELLS.map((s) => s.name).join(', ')} alone; npm test runs them under ${SHELLS.map((s) => s.name).join(', ')}`);
}


/** Why a shell's tests are skipped, or undefined to run them. On CI a missing shell is a failure, not a skip. */
export function missing(shell: Shell): string | undefined {
  if (shell.path !== undefined || process.env['CI'] !== undefined) return undefined;
  return `${shell.name} is not installed (Debian: apt-get install ${shell.name === 'busybox ash' ? 'busybox-static' : shell.name})`;
}

/** One of the supervisor's naps (see {@link Supervised.naps}). */
export interface Nap {
  readonly pid: number;
  /** Its length, from its argv. */
  readonly seconds: number;
  /** When it started, in seconds since boot (to a clock tick), as {@link uptime} counts. */
  readonly start: number;
}

/** The kernel's clock ticks a second, the unit of a process's start time in /proc. */
export const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** Seconds since boot, the clock of {@link Nap.start}. */
export function uptime(): number {
  return Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0]);
}

export interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** One supervised command. */
export class Supervised {
  readonly id = randomUUID();
  readonly child: ChildProcess;
  readonly reports: SupervisorReport[] = [];
  readonly #stdout: Buffer[] = [];
  readonly #stderr: Uint8Array[] = [];
  readonly #splitter = new ReportSplitter(this.id);
  readonly #waiters: Array<() => void> = [];
  readonly ended: Promise<Ended>;
  readonly closed: Promise<void>;

  /** `argv` goes to the supervisor as is; with `raw`, `argv` is the whole argv of the process spawned. */
  constructor(
    shell: Shell,
    argv: readonly string[],
    options: { raw?: (id: string) => string[]; prefix?: readonly string[]; home?: boolean; env?: NodeJS.ProcessEnv; cwd?: string; lease?: SupervisorLease } = {},
  ) {
    if (shell.path === undefined) throw new Error(`${shell.name} is not installed`);
    const full = options.raw?.(this.id) ?? supervisorArgv({ id: this.id, argv, shell: shell.path, prefix: options.prefix, home: options.home, lease: options.lease });
    this.child = spawn(full[0] as string, full.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: options.env, cwd: options.cwd });
    this.child.stdout?.on('data', (chunk: Buffer) => this.#stdout.push(chunk));
    this.child.stderr?.on('data', (chunk: Buffer) => this.#take(this.#splitter.push(chunk)));
    this.ended = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
    this.closed = new Promise((resolve) =>
      this.child.on('close', () => {
        this.#take(this.#splitter.end());
        resolve();
      }),
    );
  }

  #take(result: { output: Uint8Array; reports: SupervisorReport[] }): void {
    this.#stderr.push(result.output);
    this.reports.push(...result.reports);
    for (const wake of this.#waiters.splice(0)) wake();
  }

  get pid(): number {
    return this.child.pid as number;
  }

  stdout(): Buffer {
    return Buffer.concat(this.#stdout);
  }

  stderr(): Buffer {
    return Buffer.concat(this.#stderr);
  }

  /**
   * Resolves with the first report of the type once it arrived (never on a timer). The `gone`
   * report is the supervisor's last: once it came, this also waits for the child's pipes to close,
   * so `stdout()` then holds all the command wrote (its pipe is read apart from the reports').
   */
  async report<T extends SupervisorReport['type']>(type: T): Promise<Extract<SupervisorReport, { type: T }>> {
    for (;;) {
      const found = this.reports.find((r) => r.type === type);
      if (found !== undefined) {
        if (type === 'gone') await this.closed;
        return found as Extract<SupervisorReport, { type: T }>;
      }
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        await this.closed;
        const late = this.reports.find((r) => r.type === type);
        if (late !== undefined) return late as Extract<SupervisorReport, { type: T }>;
        throw new Error(`no ${type} report; got ${JSON.stringify(this.reports)}; stderr ${JSON.stringify(this.stderr().toString())}`);
      }
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        this.child.once('exit', () => resolve());
      });
    }
  }

  /** Resolves once standard output holds `count` lines. */
  async lines(count: number): Promise<string[]> {
    for (;;) {
      const lines = this.stdout().toString().split('\n').slice(0, -1);
      if (lines.length >= count) return lines;
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`only ${lines.length} lines: ${JSON.stringify(lines)}`);
      await new Promise<void>((resolve) => {
        this.child.stdout?.once('data', () => resolve());
        this.child.once('exit', () => resolve());
      });
    }
  }

  /**
   * Resolves once the supervisor has started `count` polls (its short `sleep`s, not the
   * holder's) from now on: proof that it is looping, and has answered, without a fixed wait.
   */
  async polls(count: number): Promise<void> {
    const seen = new Set<number>();
    while (seen.size < count) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`the supervisor ended after ${seen.size} polls`);
      let children: string[] = [];
      try {
        children = readFileSync(`/proc/${this.pid}/task/${this.pid}/children`, 'latin1').trim().split(' ').filter(Boolean);
      } catch {
        // gone meanwhile: the next round sees the exit
      }
      for (const child of children) {
        const argv = readArgv(Number(child));
        if (argv?.[0]?.endsWith('sleep') === true && argv[1] !== '2147483647') seen.add(Number(child));
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  /** The supervisor's naps now: its `sleep`s other than the holder, each with its length and its start (seconds since boot). */
  naps(): Nap[] {
    let children: string[] = [];
    try {
      children = readFileSync(`/proc/${this.pid}/task/${this.pid}/children`, 'latin1').trim().split(' ').filter(Boolean);
    } catch {
      return []; // gone meanwhile
    }
    const naps: Nap[] = [];
    for (const child of children.map(Number)) {
      const argv = readArgv(child);
      const start = procStat(child)?.[19];
      if (argv?.[0]?.endsWith('sleep') !== true || argv[1] === '2147483647' || start === undefined) continue;
      naps.push({ pid: child, seconds: Number(argv[1]), start: Number(start) / CLOCK_TICKS });
    }
    return naps;
  }

  /** Resolves with the first nap `until` accepts (looking every millisecond, never on a timer); rejects once the supervisor ended. */
  async nap(until: (nap: Nap) => boolean): Promise<Nap> {
    for (;;) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error('the supervisor ended');
      const found = this.naps().find(until);
      if (found !== undefined) return found;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  /** Kills, by pid, the supervisor and every live process carrying this command's tag. */
  cleanup(): void {
    // By prefix: the holder is tagged `<id>-holder`.
    killEach(markedProcesses(TAG_VARIABLE, this.id, { prefix: true }));
    if (isLive(this.pid)) this.child.kill('SIGKILL');
  }
}

/** The supervisor started by a wrapper shell that builds argv words Node cannot pass (bytes that are not UTF-8). */
export function throughWrapper(shell: Shell, words: string): (id: string) => string[] {
  return (id) => ['/bin/sh', '-c', `exec "$0" -c "$1" "$2" "$3" 0 0 '' '' ${words}`, shell.path as string, SUPERVISOR, SUPERVISOR_NAME, id];
}

function readArgv(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0');
  } catch {
    return undefined;
  }
}
