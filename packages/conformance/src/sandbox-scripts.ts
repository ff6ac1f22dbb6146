/**
 * The shell scripts the kit runs inside a sandbox to look at its processes:
 * the tool check before a run, the liveness probe, and the sweep that kills
 * what a failed case left behind. A token (a string in a command's argv)
 * is always passed in two halves and joined inside the script, so no
 * process of the probe itself (its shell, or a subshell forked from it)
 * carries the whole token in its command line.
 */
import type { ExecResult, Sandbox } from '@sandstream/types';
import { codeOf, describeError, HarnessError } from './assert.js';

/**
 * What the cases run inside the sandbox besides `sh`. `/proc` is used where
 * it exists; without it `kill -0` is the fallback (zombies then count as alive).
 */
export const KIT_TOOLS = [
  'kill', 'sleep', 'printf', 'cat', 'head', 'tail', 'env', 'pwd', 'tee', 'paste', 'cut', 'awk', 'wc',
  'rm', 'touch', 'mktemp', 'id', 'sed', 'grep', 'tr',
] as const;

/** `token` as the two arguments the scripts below join again. */
export function splitToken(token: string): [string, string] {
  const half = Math.ceil(token.length / 2);
  return [token.slice(0, half), token.slice(half)];
}

// Exit 0 alive, 1 gone, 2 the sandbox lacks what the probe needs.
const ALIVE_SCRIPT = [
  'for tool in sed cut tr kill; do command -v "$tool" >/dev/null 2>&1 || exit 2; done',
  // The probe itself is never the process it looks for (a reused pid).
  '[ "$1" = "$$" ] && exit 1',
  'if [ -r "/proc/$1/stat" ]; then',
  '  s=$(sed -e "s/^.*) //" "/proc/$1/stat" 2>/dev/null | cut -c1)',
  '  [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ] || exit 1',
  '  [ -z "$2$3" ] && exit 0',
  '  cmd=$(tr "\\000" " " < "/proc/$1/cmdline" 2>/dev/null)',
  '  case "$cmd" in *"$2$3"*) exit 0;; esac',
  '  exit 1',
  'else kill -0 "$1" 2>/dev/null; fi',
].join('\n');

/** Runs a helper command; a failure to run it is the adapter's (`run()` of a plain command is required). */
export type Exec = (argv: readonly string[]) => Promise<ExecResult>;

/**
 * Whether `pid` is a live (non-zombie) process, seen through `exec`. With
 * `token`, only a process whose command line contains it counts, so a
 * reused pid is never mistaken for the command.
 */
export async function probeAlive(exec: Exec, pid: number, token = ''): Promise<boolean> {
  const result = await exec(['sh', '-c', ALIVE_SCRIPT, 'sh', String(pid), ...splitToken(token)]);
  if (result.exitCode !== 0 && result.exitCode !== 1) {
    throw new HarnessError(`the sandbox cannot run the liveness probe (exit ${result.exitCode}): it needs sh, sed, cut, tr and kill`);
  }
  return result.exitCode === 0;
}

// Prints a line "pid:n:command line" (its first 160 characters, newlines as spaces) for each process
// it SIGKILLed, n the index of the token it carries; arguments are token halves, two by two. Needs /proc.
const SWEEP_SCRIPT = [
  '[ -d /proc/self ] || { echo "no /proc"; exit 3; }',
  'hit() { n=0; while [ $# -ge 2 ]; do case "$cmd" in *"$1$2"*) return 0;; esac; shift 2; n=$((n + 1)); done; return 1; }',
  'for d in /proc/[0-9]*; do',
  '  p=${d#/proc/}',
  '  [ "$p" = "$$" ] && continue',
  '  cmd=$(tr "\\000\\n" "  " < "$d/cmdline" 2>/dev/null) || continue',
  '  [ -n "$cmd" ] || continue',
  '  if hit "$@"; then kill -9 "$p" 2>/dev/null && printf "%s:%s:%.160s\\n" "$p" "$n" "$cmd"; fi',
  'done',
].join('\n');

// Prints "pid:n:command line" for each process whose command line carries a token, as SWEEP_SCRIPT, but kills nothing.
const FIND_SCRIPT = SWEEP_SCRIPT.replace('kill -9 "$p" 2>/dev/null && printf', 'printf');

/**
 * The pids of the processes whose command line carries one of `tokens`,
 * seen through `exec`; undefined where the sandbox cannot list them (no
 * /proc).
 */
export async function findMarked(exec: Exec, tokens: readonly string[]): Promise<number[] | undefined> {
  if (tokens.length === 0) return [];
  const result = await exec(['sh', '-c', FIND_SCRIPT, 'sh', ...tokens.flatMap(splitToken)]);
  if (result.exitCode !== 0) return undefined;
  return result.stdoutText.split('\n').flatMap((line) => /^([0-9]+):/.exec(line)?.[1] ?? []).map(Number);
}

/**
 * SIGKILLs, through `exec`, the processes whose command line carries one
 * of `tokens` (one pass); returns their pids, or undefined where the
 * sandbox cannot list them (no /proc).
 */
export async function killMarked(exec: Exec, tokens: readonly string[]): Promise<number[] | undefined> {
  if (tokens.length === 0) return [];
  const result = await exec(['sh', '-c', SWEEP_SCRIPT, 'sh', ...tokens.flatMap(splitToken)]);
  if (result.exitCode !== 0) return undefined;
  return result.stdoutText.split('\n').flatMap((line) => /^([0-9]+):/.exec(line)?.[1] ?? []).map(Number);
}

/** A process a sweep killed, the token its command line carried, and the start of that command line. */
export interface Swept {
  readonly pid: number;
  readonly token: string;
  readonly command: string;
}

/**
 * SIGKILLs, through `sandbox`, every process whose command line carries one
 * of `tokens`, until a pass finds none (at most three passes). Returns the
 * pids killed. Best effort: throws only when the sweep cannot run at all.
 */
export async function sweep(sandbox: Sandbox, tokens: readonly string[]): Promise<number[]> {
  return [...new Set((await sweepMarked(sandbox, tokens)).map((swept) => swept.pid))];
}

/** {@link sweep}, saying which token each process it killed carried. */
export async function sweepMarked(sandbox: Sandbox, tokens: readonly string[]): Promise<Swept[]> {
  if (tokens.length === 0) return [];
  const killed: Swept[] = [];
  for (let pass = 0; pass < 3; pass++) {
    const result = await sandbox.run(['sh', '-c', SWEEP_SCRIPT, 'sh', ...tokens.flatMap(splitToken)], { timeout: 10_000 });
    if (result.exitCode !== 0) throw new Error(`the sweep exited ${result.exitCode}: ${(result.stdoutText + result.stderrText).trim()}`);
    const found = result.stdoutText.split('\n').map((line) => /^([0-9]+):([0-9]+):(.*)$/.exec(line)).filter((match) => match !== null);
    if (found.length === 0) break;
    for (const [, pid, index, command] of found) killed.push({ pid: Number(pid), token: tokens[Number(index)] ?? '', command: command!.trim() });
  }
  return killed;
}

/**
 * Checks that the sandbox has the shell and tools the cases run inside it.
 * Returns what is missing, in words, or undefined when everything is there.
 * Only an absent `sh` or tool is a harness problem; any other failure of
 * run() is left to the cases, whose verdict it is.
 */
export async function missingTools(sandbox: Sandbox): Promise<string | undefined> {
  const script = `for t in "$@"; do command -v "$t" >/dev/null 2>&1 || printf '%s ' "$t"; done; printf '\\nPATH=%s' "$PATH"`;
  let result: ExecResult;
  try {
    result = await sandbox.run(['sh', '-c', script, 'sh', ...KIT_TOOLS], { timeout: 30_000 });
  } catch (error) {
    if (codeOf(error) === 'SPAWN_FAILED') {
      return `the sandbox cannot start \`sh\`, which every case runs (${describeError(error)}); it needs a POSIX shell and ${KIT_TOOLS.join(', ')} on its PATH`;
    }
    return undefined;
  }
  // Whatever else is wrong with the result is for the cases to judge.
  const text = (bytes: unknown): string => (bytes instanceof Uint8Array ? new TextDecoder().decode(bytes) : '');
  if (result.exitCode === 127 || result.exitCode === 126) {
    return `the sandbox cannot run \`sh\` (exit ${result.exitCode}: ${text(result.stderr).trim()}); it needs a POSIX shell and ${KIT_TOOLS.join(', ')} on its PATH`;
  }
  const [missing = '', path = ''] = text(result.stdout).split('\n');
  if (result.exitCode !== 0 || missing.trim() === '') return undefined;
  return `the sandbox lacks tools the cases run inside it: ${missing.trim().split(/\s+/).join(', ')} (its ${path || 'PATH is unset'})`;
}
