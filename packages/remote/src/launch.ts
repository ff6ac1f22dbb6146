/**
 * How a command becomes the one process a backend starts: the supervisor
 * (ADR-0033) with the command's argv, a prefix of wrappers that exec it in
 * turn, and the environment.
 *
 * The environment is exact. The supervisor is a shell, and a shell passes
 * on only variables whose names are identifiers, and sets some itself
 * (`PWD`, `PPID`, `IFS`; bash also `SHLVL` and `_`). So the command's
 * variables are assigned again by `env(1)` as the command is exec'd
 * (ADR-0026), with `nice -n 0` in between when the next word holds a `=`,
 * which `env` would take for one more assignment. The limits' `prlimit`
 * comes first: it execs `env`, which execs the command, so pid, group and
 * status stay the command's.
 */
import { prlimitArgs, type CommandSpec } from '@sandstream/types/runtime';
import { supervisorArgv, type SupervisorLease, type SupervisorTerminal } from './supervisor.js';
import type { StartRequest } from './transport.js';

/** Where the tools the launch needs live in the sandbox. */
export interface LaunchPaths {
  /** A POSIX shell: runs the supervisor and the helpers (default `/bin/sh`). */
  readonly shell: string;
  /** `env(1)`, for the exact environment (default `/usr/bin/env`); `nice` is taken from its directory. */
  readonly env: string;
  /** util-linux's `prlimit`, for resource limits (default `/usr/bin/prlimit`). */
  readonly prlimit: string;
  /**
   * util-linux's `script`, which holds the terminal of a background command with `pty` (spec 1.5;
   * default `/usr/bin/script`). Where it is missing, such a start fails with `SpawnFailed` naming
   * it, having made nothing.
   */
  readonly script?: string | undefined;
}

/** The defaults of {@link LaunchPaths}: what E2B's templates, Vercel's image and Debian have. */
export const DEFAULT_PATHS: LaunchPaths = Object.freeze({ shell: '/bin/sh', env: '/usr/bin/env', prlimit: '/usr/bin/prlimit', script: '/usr/bin/script' });

/** What the launch of one command takes besides the command. */
export interface LaunchDefaults {
  /** Variables every command gets, under its own. */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory of a command that names none; undefined: the backend's. */
  readonly cwd: string | undefined;
  readonly paths: LaunchPaths;
}

/**
 * The start request of a command with the given id; a foreground command's
 * supervisor watches `lease` (spec 1.4, `owner-lease.ts`). With `terminal` (a command with
 * `pty`, spec 1.5), the supervisor is started on a terminal of the command's size and reports to
 * `terminal.record`.
 *
 * A command run as another account without a working directory starts in
 * `/` and moves to its `$HOME` if it can: the backend's default (the
 * account's home) may not exist, and a backend refuses a start in a
 * directory that does not.
 *
 * @example
 * ```ts
 * import { launchRequest, DEFAULT_PATHS } from '@sandstream/remote';
 *
 * const request = launchRequest('0123456789abcdef', {
 *   argv: ['printf', '%s', 'x'], env: { A: '1' }, cwd: undefined, stdin: 'ignore', limits: undefined, user: undefined, pty: undefined,
 * }, { env: {}, cwd: undefined, paths: DEFAULT_PATHS });
 * // request.argv: ['/bin/sh', '-c', SUPERVISOR, 'sandstream-supervisor', id, '3', '0', '', '', '/usr/bin/env', '--', 'A=1', 'printf', '%s', 'x']
 * ```
 */
export function launchRequest(id: string, command: CommandSpec, defaults: LaunchDefaults, lease?: SupervisorLease, terminal?: SupervisorTerminal): StartRequest {
  const { paths } = defaults;
  // Spec 1.5, T1: a terminal's TERM is xterm-256color unless the command's env sets it.
  const env = { ...defaults.env, ...(terminal === undefined ? {} : { TERM: 'xterm-256color' }), ...command.env };
  const prefix = command.limits === undefined ? [] : prlimitArgs(paths.prlimit, command.limits);
  const assignments = Object.entries(env).map(([name, value]) => `${name}=${value}`);
  if (assignments.length > 0) {
    // `--` first: a name such as `-x` is no option of env's.
    prefix.push(paths.env, '--', ...assignments);
    if (command.argv[0]?.includes('=') === true) prefix.push(`${paths.env.replace(/[^/]*$/, '')}nice`, '-n', '0');
  }
  const home = command.user !== undefined && command.cwd === undefined && defaults.cwd === undefined;
  return {
    argv: supervisorArgv({ id, argv: command.argv, prefix, home, shell: paths.shell, lease, terminal }),
    // Not the tag: the supervisor exports it to the command's tree, and stays out of the sweep
    // that SIGKILLs the tree, so it lives to report `gone`. Before it forked, the id in its argv
    // finds it (the helper's `abandon`).
    env,
    cwd: command.cwd ?? defaults.cwd ?? (home ? '/' : undefined),
    user: command.user,
    stdin: command.stdin === 'pipe' || terminal !== undefined,
    id,
    ...(terminal === undefined || command.pty === undefined ? {} : { pty: { cols: command.pty.cols, rows: command.pty.rows } }),
  };
}
