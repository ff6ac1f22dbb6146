/**
 * Crashing an owner (spec 1.4 section 9.11, SS-OWNER-1): a second OS process
 * that loads the adapter module, starts a command tree in the foreground on
 * the environment of the case's sandbox, and is then killed with SIGKILL;
 * and finding that tree by its token through a sandbox of the kit's.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from '@sandstream/types';
import { ConformanceFailure, describeError, HarnessError } from '../../assert.js';
import { helperExec, type CaseContext } from '../../context.js';
import type { OwnerProcess } from '../../hooks.js';
import type { OwnerLine, OwnerOrder } from '../../owner-child.js';
import { splitToken, type Exec } from '../../sandbox-scripts.js';
import type { LaunchedOwner, OwnerLauncher } from '../../owner-launcher.js';

// The launcher's types, for the cases as before; the engine owns them (owner-launcher.ts).
export type { LaunchedOwner, OwnerLauncher } from '../../owner-launcher.js';

/** The owner process's script, in the kit's dist/ (the same path from src/ and from dist/). */
export const OWNER_CHILD = fileURLToPath(new URL('../../../dist/owner-child.js', import.meta.url));

/**
 * The tree the owner starts: a shell (the leader) with a background child
 * that answers SIGTERM by recording it, and a foreground child; each carries
 * the case's token after its role, so a scan tells them apart. The leader
 * records that it runs where the case's sandbox reads files, and a command
 * follows the foreground child, so the shell cannot exec into it. The
 * children write nowhere near the owner's pipes (a shell reports a child
 * killed by a signal on its standard error): a write to a pipe whose reader
 * died ends a process by SIGPIPE, which would end the tree for an adapter
 * that does nothing, and before its SIGTERM handler ran.
 *
 * On a terminal (`terminal`), every process of it ignores SIGHUP, and the
 * background child is a job in a process group of its own (`set -m`), in
 * the terminal's session: the hangup of a closed terminal ends none of it,
 * and a signal to the leader's group leaves the job running (SS-PTY-5).
 */
function treeScript(foreground: string, terminal = false): string {
  return [
    'T=$1; D=$2',
    ...(terminal ? ["trap '' HUP"] : []),
    ': > "$D/leader-up"',
    ...(terminal ? ['set -m 2>/dev/null'] : []),
    'sh -c \'trap "echo term >> \\"$2/background-term\\"; exit 0" TERM; while :; do sleep 0.05; done\' owner-background "$T" "$D" >/dev/null 2>&1 &',
    ...(terminal ? ['set +m 2>/dev/null'] : []),
    foreground,
    'echo "ended $?"',
  ].join('\n');
}

/** The foreground child of owner.crash's tree, writing nowhere near the owner's pipes. */
const SILENT_CHILD = 'sh -c \'while :; do sleep 0.05; done\' owner-foreground "$T" >/dev/null 2>&1';

/** The roles of the tree's processes, as their argv names them. */
export const ROLES = ['owner-leader', 'owner-background', 'owner-foreground'] as const;

/**
 * The foreground child of owner.link-lost's tree: it prints `pong` once the
 * kit makes `$D/ping`, and only then, so a Process whose link was
 * re-established shows it, while nothing is written to a link that is gone
 * before the verdict's bound has passed.
 */
const ANSWERING_CHILD = 'sh -c \'while :; do if [ -e "$2/ping" ]; then rm -f "$2/ping"; echo pong; fi; sleep 0.05; done\' owner-foreground "$T" "$D" 2>/dev/null';

/** The argv of the tree the owner starts; `answering`: its foreground child answers a ping (owner.link-lost). */
export function ownerTree(token: string, dir: string, answering = false): string[] {
  return ['sh', '-c', treeScript(answering ? ANSWERING_CHILD : SILENT_CHILD), 'owner-leader', token, dir];
}

/** The argv of the tree an owner starts on a terminal (pty.owner-crash): see {@link treeScript}. */
export function ownerTerminalTree(token: string, dir: string): string[] {
  return ['sh', '-c', treeScript(SILENT_CHILD, true), 'owner-leader', token, dir];
}

// Prints "pid role|" for each process whose command line carries the token (given in halves, so
// the scan never finds itself) right after a role; exit 3 without /proc.
const SCAN_SCRIPT = [
  '[ -d /proc/self ] || exit 3',
  'for d in /proc/[0-9]*; do',
  '  p=${d#/proc/}; [ "$p" = "$$" ] && continue',
  '  cmd=$(tr "\\000" " " < "$d/cmdline" 2>/dev/null) || continue',
  '  for r in owner-leader owner-background owner-foreground; do',
  '    case "$cmd" in *"$r $1$2"*) printf "%s %s|" "$p" "$r";; esac',
  '  done',
  'done',
].join('\n');

/** A process of the tree, seen by a scan. */
export interface Seen {
  readonly pid: number;
  readonly role: string;
}

/** The processes of the tree carrying `token` that `exec` sees now. */
export async function scanTree(exec: Exec, token: string): Promise<Seen[]> {
  const result = await exec(['sh', '-c', SCAN_SCRIPT, 'sh', ...splitToken(token)]);
  if (result.exitCode === 3) throw new HarnessError('the sandbox has no /proc: the kit cannot find the owner\'s command tree by its token');
  if (result.exitCode !== 0) throw new ConformanceFailure(`a helper scanning /proc failed (exit ${result.exitCode}): ${result.stderrText.trim()}`);
  return result.stdoutText
    .split('|')
    .filter((entry) => entry.trim() !== '')
    .map((entry) => {
      const [pid, role] = entry.trim().split(' ');
      return { pid: Number(pid), role: role! };
    });
}

/** "pid 12 (owner-background)". */
export function named(seen: readonly Seen[]): string {
  return seen.map((s) => `pid ${s.pid} (${s.role})`).join(', ');
}

/** Where the kit looks at the tree from: the attach hook's handle on the case's environment, or the case's sandbox. */
export interface Lookout {
  readonly exec: Exec;
  readonly what: string;
  close(): Promise<void>;
}

/** A lookout on the case's environment: through the attach hook where the adapter has one, else the case's sandbox. */
export async function openLookout(ctx: CaseContext): Promise<Lookout> {
  if (ctx.attach === undefined) return { exec: ctx.exec, what: "the case's sandbox", close: async () => undefined };
  let attached: Sandbox;
  try {
    attached = await ctx.attach(ctx.sandbox);
  } catch (error) {
    throw new HarnessError(`the adapter module's attach hook failed: ${describeError(error)}`);
  }
  return { exec: helperExec(attached, ctx.signal), what: "the attach hook's handle on the case's environment", close: () => attached.close().catch(() => undefined) };
}

/** How the case starts its owner process: from the `owner` hook, and the run's launcher or `ownerModule`. */
export async function ownerLauncherOf(ctx: CaseContext): Promise<(argv: readonly string[], via: OwnerOrder['via'], withinMs: number) => Promise<LaunchedOwner>> {
  let answer: OwnerProcess = {};
  if (ctx.owner !== undefined) {
    try {
      answer = (await ctx.owner(ctx.sandbox)) ?? {};
    } catch (error) {
      throw new HarnessError(`the adapter module's owner hook failed: ${describeError(error)}`);
    }
  }
  const env = answer.env ?? {};
  const launch = ctx.launchOwner;
  if (launch !== undefined) return (argv, via, withinMs) => launch(env, argv, via, withinMs);
  const module = answer.module ?? ctx.ownerModule;
  if (module === undefined) {
    throw new HarnessError(
      'the kit cannot start an owner process to crash: give `ownerModule` (the adapter module\'s file or package, which the CLI passes itself) to runConformance or describeConformance, or export `conformanceHooks.owner` answering its `module`',
    );
  }
  if (!existsSync(OWNER_CHILD)) throw new HarnessError(`the kit's owner script ${OWNER_CHILD} is missing: build the kit (npm run build -w @sandstream/conformance)`);
  return (argv, via, withinMs) => startOwner({ module, env }, argv, via, withinMs);
}

/** Starts the owner process of the adapter module `how.module` with `argv` and resolves once it reported the command started. */
async function startOwner(how: { module: string; env: Readonly<Record<string, string>> }, argv: readonly string[], via: OwnerOrder['via'], withinMs: number): Promise<LaunchedOwner> {
  const order: OwnerOrder = { module: how.module, argv, via };
  const child = spawn(process.execPath, [OWNER_CHILD, JSON.stringify(order)], { env: { ...process.env, ...how.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (data: Buffer) => {
    err = (err + data.toString('utf8')).slice(-2_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const owner: LaunchedOwner = {
    async crash() {
      kill();
      await exited;
      return performance.now();
    },
    async dispose() {
      kill();
    },
  };
  let out = '';
  const line = new Promise<OwnerLine>((resolve, reject) => {
    child.stdout!.on('data', (data: Buffer) => {
      out += data.toString('utf8');
      const end = out.indexOf('\n');
      if (end >= 0) resolve(JSON.parse(out.slice(0, end)) as OwnerLine);
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`it exited (${code ?? signal}) before reporting the command started`)));
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`it did not report the command started within ${withinMs} ms`)), withinMs);
  });
  try {
    const first = await Promise.race([line, late]);
    if ('error' in first) throw new Error(first.error);
    return owner;
  } catch (error) {
    kill();
    const tail = err.trim() === '' ? '' : `; its standard error: ${err.trim().slice(-500)}`;
    throw new HarnessError(`the owner process (${how.module}, with ${JSON.stringify(Object.keys(how.env))} set) failed: ${describeError(error)}${tail}`);
  } finally {
    clearTimeout(timer);
  }
}

/** Kills, through the case's sandbox, whatever of the tree still runs; never throws. */
export async function killTree(ctx: CaseContext, token: string): Promise<void> {
  try {
    const left = await scanTree(ctx.exec, token);
    if (left.length > 0) await ctx.exec(['kill', '-KILL', ...left.map((s) => String(s.pid))]);
  } catch {
    // Best effort: the engine's sweep after a failure looks for the token too.
  }
}
