/**
 * How a command's variables reach it in an isolated sandbox without any
 * value on a command line: `/proc/<pid>/cmdline` is readable by every
 * account of the host, `/proc/<pid>/environ` only by the process's own.
 *
 * The values travel in the environment of the command's entry (`nsenter`,
 * `setsid`, the entry's shell), each in a variable of its own whose name
 * says nothing (`SANDSTREAM_V_<n>`): no name there is one that the dynamic
 * loader, the C library or util-linux reads (`nsenter` runs on the host, so
 * a command's `LD_PRELOAD` must never reach it as such). At the end of the
 * entry, the variables are set under their own names one of two ways:
 *
 * - **export**: the entry's shell evaluates a text of `export NAME="$SANDSTREAM_V_<n>"`
 *   lines (names only; the values are expanded, never parsed) and execs the
 *   command: no program more. Taken where every name is a shell identifier
 *   that the shell leaves alone, under a shell that adds nothing on exec
 *   (dash, busybox ash: not bash, ksh or zsh, which set `_`).
 * - **env**: GNU env(1) with `-i -S`, whose split string names each
 *   variable and refers to its carrier (`"NAME=${SANDSTREAM_V_<n>}"`): env
 *   expands the reference itself, so its command line holds names only, and
 *   `-i` leaves the command exactly its own variables. Any name goes.
 *
 * Where neither works (a name the shell cannot set, and an env(1) without
 * `-S`: busybox's), the command is refused with `SpawnFailed` before
 * anything starts: never a value on a command line.
 */

/**
 * The entry's own variables (`nsenter`, `setsid`, the entry's shell), beside
 * the carriers: a fixed PATH and no locale to load (`nsenter` took 0.5 ms of
 * its 1.6 to load one).
 */
export const ENTRY_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  LC_ALL: 'C',
};

/** The prefix of a value's carrier. */
const CARRIER = 'SANDSTREAM_V_';
/** The entry's own variables, besides the carriers. */
export const ENTRY_PATH = 'SANDSTREAM_ENTRY_PATH';
const ENTRY_EXPORT = 'SANDSTREAM_ENTRY_EXPORT';
const ENTRY_SPLIT = 'SANDSTREAM_ENTRY_SPLIT';

/**
 * Names a POSIX shell keeps to itself or checks (dash refuses a non-numeric
 * OPTIND; bash keeps PPID, UID, EUID, SHELLOPTS and BASHOPTS read-only, and
 * LINENO, RANDOM, SECONDS, HISTCMD, FUNCNAME and GROUPS as its own): these go
 * through env(1).
 */
const SHELL_OWNED = new Set(['_', 'OPTIND', 'PPID', 'UID', 'EUID', 'GROUPS', 'SHLVL', 'LINENO', 'RANDOM', 'SRANDOM', 'SECONDS', 'HISTCMD', 'FUNCNAME', 'SHELLOPTS', 'BASHOPTS', 'BASHPID', 'EPOCHSECONDS', 'EPOCHREALTIME']);

/** What the entry's shell can export itself. */
function exportable(name: string): boolean {
  return (
    /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) &&
    !SHELL_OWNED.has(name) &&
    !name.startsWith('BASH') &&
    !name.startsWith('SANDSTREAM_V_') &&
    !name.startsWith('SANDSTREAM_ENTRY_')
  );
}

/** A name inside a double-quoted word of env(1)'s split string: `\`, `"` and `$` escaped. */
function splitWord(name: string, carrier: string): string {
  return `"${name.replace(/[\\"$]/g, (c) => `\\${c}`)}=\${${carrier}}"`;
}

/** How this machine's sandbox can set a command's variables (probe.ts finds out). */
export interface EntryTools {
  /** Whether `/bin/sh` adds nothing of its own to an exec'd program's environment (not bash, ksh or zsh). */
  readonly exportShell: boolean;
  /** The path of an env(1) that has `-S` and expands `${NAME}` in it, if there is one. */
  readonly envSplit: string | undefined;
}

/** The entry's variables and how it is to set the command's, or why it cannot. */
export type EntryEnvironment =
  | {
      /** `export`, or env(1)'s path: the parameter of ENTRY_SCRIPT. */
      readonly mode: string;
      /** The entry's environment: the carriers and the texts naming them. */
      readonly variables: Readonly<Record<string, string>>;
    }
  | { readonly refused: string };

/**
 * The entry's environment carrying `env`, the command's exact variables,
 * and the mode that sets them; `PATH` (where the command has one) also as
 * {@link ENTRY_PATH}, which the entry looks the program up in.
 */
export function entryEnvironment(env: Readonly<Record<string, string>>, tools: EntryTools): EntryEnvironment {
  const names = Object.keys(env);
  const variables: Record<string, string> = {};
  names.forEach((name, index) => (variables[`${CARRIER}${index}`] = env[name]!));
  if (Object.hasOwn(env, 'PATH')) variables[ENTRY_PATH] = env['PATH']!;
  const carriers = names.map((_, index) => `${CARRIER}${index}`);
  if (tools.exportShell && names.every(exportable)) {
    // One line per variable; the carriers and this text itself go last.
    const lines = names.map((name, index) => `export ${name}="$${carriers[index]}"`);
    lines.push(`unset ${[...carriers, ENTRY_EXPORT].join(' ')}`);
    variables[ENTRY_EXPORT] = lines.join('\n');
    return { mode: 'export', variables };
  }
  if (tools.envSplit !== undefined) {
    // `--` first: a name starting with `-` is not an option of env's.
    variables[ENTRY_SPLIT] = ['--', ...names.map((name, index) => splitWord(name, carriers[index]!))].join(' ');
    return { mode: tools.envSplit, variables };
  }
  const hard = names.filter((name) => !exportable(name));
  const why = tools.exportShell ? `${hard.map((name) => JSON.stringify(name)).join(', ')} cannot be set by the sandbox's shell` : "the sandbox's /bin/sh adds variables of its own to every program";
  return {
    refused: `the command's variables cannot reach it without their values on a command line: ${why}, and no env(1) with -S was found in /usr/bin or /bin`,
  };
}
