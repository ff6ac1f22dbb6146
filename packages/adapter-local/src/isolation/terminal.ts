/**
 * Terminals in the isolated mode (spec 1.5, ADR-0052). The terminal lives
 * inside the sandbox: util-linux's `script`, started by the entry in the
 * sandbox's namespaces, opens it in the sandbox's own devpts, so `tty`
 * names it there and no host terminal is reachable. This process reads the
 * terminal's bytes from `script`'s standard output and writes input to its
 * standard input.
 *
 * `script` reports a command killed by signal n as exit 128+n, so its
 * status is not the command's. The command is therefore not `script`'s
 * child but a job of a small shell (HOLDER_SCRIPT) on the terminal: the
 * job leads its own process group, takes the terminal's foreground, stops
 * the holder, then execs the command. A stopped holder reaps nothing, so
 * the command's end leaves a zombie whose `/proc/<pid>/stat` carries the
 * exact wait status, read here; only then is the holder killed, and
 * `script` drains the terminal and ends.
 *
 *     nsenter → setsid → entry sh → prlimit → setpriv → script
 *       └ sh (session leader; between script and the holder, since script
 *            stops itself when its own child stops)
 *         └ holder sh (set -m; stopped while the command runs)
 *           └ the command (its own group, the terminal's foreground)
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { StdinClosed, type TerminalSize } from '@sandstream/types';
import { isRunningState, liveProcesses, readProcStat, readProcStatFields, someProcess, type ExitStatus } from '@sandstream/types/runtime';
import { sessionMembers } from '../process-group.js';
import { findUtility } from '../utilities.js';
import { readFirstChild } from './environment.js';
import type { IsolationSupport } from './probe.js';

/** The programs a terminal in the isolated mode needs: `script` inside the sandbox (the host's /usr), `stty` here. */
export interface IsolatedTerminalTools {
  readonly script: string;
  readonly stty: string;
}

/**
 * The tools for terminals in the isolated mode, or why there are none: a
 * private devpts (the sandbox's own terminals), util-linux's `script` and
 * coreutils' `stty`.
 */
export function isolatedTerminalTools(support: IsolationSupport, find: (name: string) => string | undefined = findUtility): IsolatedTerminalTools | { readonly unavailable: string } {
  if (!support.devpts) return { unavailable: 'the sandbox cannot mount a devpts of its own, where its terminals would live' };
  const script = find('script');
  if (script === undefined) return { unavailable: "util-linux's script was not found in the system directories" };
  const stty = find('stty');
  if (stty === undefined) return { unavailable: "coreutils' stty was not found in the system directories" };
  return { script, stty };
}

/**
 * The holder: `$1`, `$2` the size, `$3` how the command's variables are set
 * (the entry's mode: entry-env.ts), then the command's argv. Until the
 * command execs, its variables are still the entry's carriers, so nothing
 * the holder or `script` set reaches it, and a name no shell keeps (one
 * that is not an identifier) is still there. Reports `pid N` (the job's pid
 * in the sandbox) on fd 3, or a word saying what failed. The terminal comes
 * on fd 9 (stderr is /dev/null so that the shell above reports no "Killed"
 * on the terminal). The job waits until it is the foreground group (the
 * holder's `fg` makes it so), stops the holder, and execs as the entry
 * would have (scripts.ts).
 */
export const HOLDER_SCRIPT = String.raw`exec 2>&9 9>&-
stty cols "$1" rows "$2" 2>/dev/null || { echo "stty" >&3; exit 125; }
mode=$3
shift 3
set -m 2>/dev/null
case $- in *m*) ;; *) echo "jobs" >&3; exit 125 ;; esac
(
  read -r _ _ _ holder _ < /proc/self/stat
  read -r job _ < /proc/self/stat
  echo "pid $job" >&3
  exec 3>&-
  tries=0
  until read -r _ _ _ _ group _ _ foreground _ < /proc/self/stat; [ "$group" = "$foreground" ]; do
    tries=$((tries + 1))
    [ "$tries" -lt 1000000 ] || exit 125
  done
  kill -s STOP "$holder"
  until read -r _ _ state _ < "/proc/$holder/stat"; [ "$state" = T ]; do :; done
  [ "$mode" = export ] || exec "$mode" -i -S "$SANDSTREAM_ENTRY_SPLIT" "$@"
  unset PATH LC_ALL PWD OLDPWD SANDSTREAM_ENTRY_PATH
  eval "$SANDSTREAM_ENTRY_EXPORT"
  exec "$@"
) &
exec 3>&-
fg >/dev/null
`;

/** A word quoted for sh. */
function quoted(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * `script`'s argv, for `argv` on a terminal of `size`, its variables set by
 * the entry's `mode` once it execs. `script` runs its line with the
 * sandbox's /bin/sh: the entry's environment has no SHELL.
 */
export function terminalLaunch(tools: IsolatedTerminalTools, size: TerminalSize, mode: string, argv: readonly string[]): string[] {
  const holder = ['/bin/sh', '-c', HOLDER_SCRIPT, 'sandstream-terminal', String(size.cols), String(size.rows), mode, ...argv].map(quoted).join(' ');
  // `; exit 0`: the shell does not exec the holder in its place (it would be script's child).
  return [tools.script, '-q', '-c', `exec 9>&2 2>/dev/null; ${holder}; exit 0`, '/dev/null'];
}

/** Signal names by number, for a status read from /proc. */
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name as NodeJS.Signals]));

/**
 * The poll for the command's zombie: every millisecond at first (a short
 * command's result waits for it), then less often, doubling up to 50 ms.
 */
const WATCH_FIRST_MS = 1;
const WATCH_QUICK_POLLS = 16;
const WATCH_MAX_MS = 50;

/** Field 52 of /proc/<pid>/stat (the wait status), as an index of readProcStatFields. */
const EXIT_CODE_FIELD = 49;

/** The host pids of one terminal command's processes, and the numbers the sandbox knows the first two by. */
export interface TerminalProcesses {
  /** The shell that leads the terminal's session. */
  readonly session: number;
  readonly holder: number;
  readonly job: number;
  readonly sessionInSandbox: number;
  readonly holderInSandbox: number;
}

/** The pid of host process `pid` in its innermost PID namespace (`NSpid`, the last number), or undefined. */
function innermostPid(pid: number): number | undefined {
  try {
    const numbers = /^NSpid:\s*(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]?.trim().split(/\s+/);
    return numbers === undefined ? undefined : Number(numbers.at(-1));
  } catch {
    return undefined;
  }
}

/**
 * Finds the processes under `script` (host pid `script`): its shell, the
 * holder and the job, which reported `jobInSandbox` as its pid; undefined
 * if one is not where it should be.
 */
function findTerminalProcesses(script: number, jobInSandbox: number): TerminalProcesses | undefined {
  const session = readFirstChild(script).pid;
  const holder = session === undefined ? undefined : readFirstChild(session).pid;
  const job = holder === undefined ? undefined : readFirstChild(holder).pid;
  if (session === undefined || holder === undefined || job === undefined || innermostPid(job) !== jobInSandbox) return undefined;
  const sessionInSandbox = innermostPid(session);
  const holderInSandbox = innermostPid(holder);
  if (sessionInSandbox === undefined || holderInSandbox === undefined) return undefined;
  return { session, holder, job, sessionInSandbox, holderInSandbox };
}

/**
 * One command's terminal in the sandbox, seen from the host: its status
 * read from the job's zombie, its session signalled, its size set, and its
 * holder released at the end.
 */
export class SandboxTerminal {
  readonly #sessionStart: number;
  readonly #holderStart: number | undefined;
  #released = false;
  #watchTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly tools: IsolatedTerminalTools,
    /** The sandbox's procfs, seen through its init (`/proc/<init>/root/proc`). */
    private readonly sandboxProc: string,
    readonly processes: TerminalProcesses,
    /** The command's pid in the sandbox. */
    readonly sandboxPid: number,
  ) {
    this.#sessionStart = readProcStat(processes.session)?.startTicks ?? 0;
    this.#holderStart = readProcStat(processes.holder)?.startTicks;
  }

  /**
   * The terminal of the command whose holder reported `line` (`pid N`, or
   * what failed), under `script` (host pid `script`); or why the start
   * failed.
   */
  static find(tools: IsolatedTerminalTools, init: number, script: number | undefined, line: string): SandboxTerminal | string {
    if (line === 'jobs') return "the sandbox's /bin/sh has no job control (set -m), which a command on a terminal needs";
    if (line === 'stty') return "stty could not set the size of the sandbox's terminal";
    if (!line.startsWith('pid ')) return `the terminal's holder reported ${JSON.stringify(line)} instead of the command's pid`;
    const pid = Number(line.slice(4));
    const processes = script === undefined ? undefined : findTerminalProcesses(script, pid);
    if (processes === undefined) return "the command on the sandbox's terminal was not found on the host";
    return new SandboxTerminal(tools, `/proc/${init}/root/proc`, processes, pid);
  }

  /**
   * Polls for the command's zombie and calls `ended` with its status. A
   * command reaped unseen (its holder continued by someone) is never
   * reported here: `script`'s own status is then what is left.
   */
  watch(ended: (status: ExitStatus) => void, polls = 0, delay = WATCH_FIRST_MS): void {
    clearTimeout(this.#watchTimer);
    const status = this.status();
    if (status === 'running') {
      const next = polls < WATCH_QUICK_POLLS ? delay : Math.min(delay * 2, WATCH_MAX_MS);
      this.#watchTimer = setTimeout(() => this.watch(ended, polls + 1, next), delay);
    } else if (status !== 'gone') {
      ended(status);
    }
  }

  stopWatching(): void {
    clearTimeout(this.#watchTimer);
  }

  /** The command's status once it has ended (its zombie), 'running', or 'gone' when it was reaped unseen. */
  status(): ExitStatus | 'running' | 'gone' {
    const fields = readProcStatFields(this.processes.job);
    if (fields === undefined) return 'gone';
    if (fields[0] !== 'Z') return 'running';
    const raw = Number(fields[EXIT_CODE_FIELD]);
    if (!Number.isInteger(raw)) return 'gone';
    const signal = raw & 0x7f;
    if (signal === 0) return { exitCode: (raw >> 8) & 0xff, signal: null };
    return { exitCode: null, signal: SIGNAL_NAMES.get(signal) ?? 'SIGKILL' };
  }

  /**
   * Whether a process of the command's session other than its shell and
   * the holder is alive, as the sandbox's /proc lists them (a few, where
   * the host's lists every process of the machine). The whole session
   * lives in the sandbox: its processes start there and cannot leave.
   */
  othersAlive(): boolean {
    const { sessionInSandbox: session, holderInSandbox: holder } = this.processes;
    return someProcess((entry) => entry.session === session && entry.pid !== session && entry.pid !== holder && isRunningState(entry.state), { proc: this.sandboxProc }) ?? true;
  }

  /** Sends `signal` to every live process of the session but its shell and the holder, each by its host pid. */
  signal(signal: NodeJS.Signals): void {
    const { session, holder } = this.processes;
    const members = sessionMembers(session, this.#sessionStart, liveProcesses()).filter((pid) => pid !== session && pid !== holder);
    for (const pid of members) {
      try {
        process.kill(pid, signal);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
  }

  /** Sets the terminal's size through the holder's standard input (the terminal); the kernel sends SIGWINCH. */
  resize(cols: number, rows: number): Promise<void> {
    if (this.#released) return Promise.reject(new StdinClosed('the terminal is closed'));
    const device = `/proc/${this.processes.holder}/fd/0`;
    return new Promise((resolve, reject) => {
      execFile(this.tools.stty, ['-F', device, 'cols', String(cols), 'rows', String(rows)], { timeout: 10_000 }, (error, _stdout, stderr) => {
        if (error === null) return resolve();
        if (this.#released || readProcStat(this.processes.holder) === undefined) return reject(new StdinClosed('the terminal is closed'));
        reject(new Error(`the terminal could not be resized: ${stderr.trim() || error.message}`, { cause: error }));
      });
    });
  }

  /** Ends the holder: `script` then drains the terminal and ends, and its standard output closes. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    // Only the holder itself: a number that names a later process is left alone.
    const holder = readProcStat(this.processes.holder);
    if (holder === undefined || holder.startTicks !== this.#holderStart) return;
    try {
      process.kill(this.processes.holder, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}
