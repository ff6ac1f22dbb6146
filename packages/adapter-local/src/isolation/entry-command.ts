/**
 * The command line of `nsenter` that runs one command in a sandbox, and
 * the environment it is spawned with: the carriers of the command's
 * variables (entry-env.ts), never their values on a command line.
 */
import { posix } from 'node:path';
import { SpawnFailed } from '@sandstream/types';
import { prlimitArgs, type CommandSpec } from '@sandstream/types/runtime';
import { describeExhaustion, exhaustionHint, exhaustionInText } from '../exhaustion.js';
import { switchUserArgs } from '../users.js';
import type { IsolatedDriverOptions } from './driver.js';
import { entryEnvironment } from './entry-env.js';
import type { EnvironmentHandle } from './handle.js';
import { ENTRY_SCRIPT } from './scripts.js';
import { terminalLaunch } from './terminal.js';

/** What `nsenter` is spawned with for one command. */
export interface EntryCommand {
  /** The command's working directory, inside the sandbox. */
  readonly cwd: string;
  /** `nsenter`'s arguments: the namespaces of the init `init`, then the entry (scripts.ts) and what it execs. */
  readonly args: string[];
  /** The carriers of the command's variables and the texts naming them, for the entry's environment. */
  readonly variables: Readonly<Record<string, string>>;
}

/**
 * The entry of `command` into the sandbox whose init is `init`. Throws
 * `SpawnFailed` for a command that cannot be started there (its variables
 * cannot reach it without a command line, or it asks for a terminal where
 * there is none).
 */
export function entryCommand(command: CommandSpec, options: IsolatedDriverOptions, init: number): EntryCommand {
  const user = options.user;
  const cwd = posix.resolve(options.defaultCwd, command.cwd ?? '.');
  const identity: Record<string, string> = {};
  if (user?.name !== undefined) identity['USER'] = identity['LOGNAME'] = user.name;
  if (user?.home !== undefined) identity['HOME'] = user.home;
  const pty = command.pty;
  const tools = options.terminalTools;
  if (pty !== undefined && tools === undefined) throw new SpawnFailed(command.argv, 'this sandbox has no terminals (capability pty)');
  // A terminal's TERM is fixed unless the call sets it (ADR-0052, T1).
  const env = { ...options.baseEnv, ...identity, ...(pty === undefined ? {} : { TERM: 'xterm-256color' }), ...command.env };
  const { support } = options;
  // The variables travel in the entry's environment, never on a command line (entry-env.ts).
  const entry = entryEnvironment(env, support);
  if ('refused' in entry) throw new SpawnFailed(command.argv, entry.refused);
  if (pty !== undefined && entry.mode !== 'export' && command.argv[0]!.includes('=')) {
    // env(1) would take it for a variable: on pipes setpriv's path comes first, on a terminal nothing can.
    throw new SpawnFailed(command.argv, "a program whose name holds '=' cannot run on a terminal when its variables are set by env(1) -S");
  }
  const wrapper: string[] = [];
  if (command.limits !== undefined) wrapper.push(...prlimitArgs(options.prlimitPath!, command.limits));
  // The command keeps its uid (root inside, as a container's) but no capability: it cannot
  // remount the read-only root, mount, or regain privileges through a set-uid program.
  const setpriv = support.setpriv;
  wrapper.push(setpriv, '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all');
  if (user !== undefined) wrapper.push(...switchUserArgs(setpriv, user).slice(1, -1));
  wrapper.push('--');
  const namespaces = ['--pid', '--mount', '--ipc', '--uts'];
  if (!options.environment.network) namespaces.push('--net');
  if (support.via === 'user-namespace') namespaces.unshift('--user', '--preserve-credentials');
  const args = [
    '--target',
    String(init),
    ...namespaces,
    '--',
    support.setsid,
    '/bin/sh',
    '-c',
    ENTRY_SCRIPT,
    'sandstream-entry',
    cwd,
    command.argv[0]!,
    entry.mode,
    pty === undefined ? 'close' : 'keep',
    ...wrapper,
    ...(pty === undefined ? command.argv : terminalLaunch(tools!, pty, entry.mode, command.argv)),
  ];
  return { cwd, args, variables: entry.variables };
}

/** The reason of a spawn of `nsenter` that failed. */
export function spawnError(error: NodeJS.ErrnoException): string {
  return describeExhaustion(error) ?? `${error.code ?? ''} ${error.message}`.trim();
}

/**
 * Why a command never entered the sandbox: the environment's own end, this
 * process out of descriptors while it looked for the command (`lookup`),
 * or what `nsenter`, `setsid` or the entry's shell said on stderr.
 */
export function entryFailure(environment: EnvironmentHandle, stderr: string, lookup?: NodeJS.ErrnoException): string {
  if (environment.gone !== undefined) return environment.gone.message;
  const exhausted = lookup === undefined ? undefined : describeExhaustion(lookup);
  if (exhausted !== undefined) return exhausted;
  const said = stderr.trim();
  const code = exhaustionInText(said);
  const reason = code === undefined ? said : `${code}: ${exhaustionHint(code)} (${said})`;
  return `the command could not enter the sandbox's namespaces${reason === '' ? '' : `: ${reason}`}`;
}

/** The reason of the entry's refusal `line` (scripts.ts: `no such executable`, `cwd …`) of `program` in `cwd`. */
export function entryRefusal(line: string, program: string, cwd: string): string {
  if (!line.startsWith('cwd ')) return `ENOENT: no such executable ${JSON.stringify(program)} in the sandbox`;
  const problem = line.slice(4);
  const code = problem.includes('not a directory') ? 'ENOTDIR' : problem.includes('accessible') ? 'EACCES' : 'ENOENT';
  return `${code}: the working directory ${JSON.stringify(cwd)} ${problem} in the sandbox`;
}
