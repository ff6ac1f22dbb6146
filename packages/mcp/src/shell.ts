// The `shell` tool: a shell line whose working directory and exported
// variables carry over from call to call within one MCP session
// (ADR-0055). The state lives in the sandbox, in a directory of the
// session's (`${TMPDIR:-/tmp}/.sandstream-shell-<token>/`, mode 0700) whose
// file `state` each call sources first and rewrites on its way out; on the host the session keeps
// only the token. Every call is still one Sandstream command, run by
// `execute` exactly as `exec` runs one: its exit status, time limit, output
// budget, result and cancellation are exec's.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { InvalidState, type Sandbox } from '@sandstream/types';
import { execute, failure, type ExecCall, type ExecSettings } from './exec.js';

export const shellInputSchema = z
  .object({
    command: z
      .string()
      .min(1)
      .refine((text) => !text.includes('\0'), 'must not contain a NUL byte')
      .describe('Shell commands, run by sh in the directory and with the exported variables the previous call of this tool left (cd, export and source carry over).'),
    timeout: z.number().int().positive().optional().describe('Time limit in milliseconds (an integer of 1 or more; the default and the maximum are in the tool description).'),
    stdin: z.string().optional().describe('Text written to standard input, which is then closed.'),
    reset: z.boolean().optional().describe("true: forget the saved state first, so this command starts in the sandbox's default directory and environment."),
  })
  .strict();

/** The arguments of the `shell` tool (null stands for an argument not given). */
export type ShellInput = z.infer<typeof shellInputSchema>;

/** The prefix of a state directory's name, in the sandbox's temporary directory. */
export const SHELL_STATE_PREFIX = '.sandstream-shell-';

// The wrapper, run as `sh -c WRAPPER sh TOKEN MODE SCRIPT`. Its own
// variables are not exported, so they are not saved; `shift 3` leaves the
// script no positional parameters, as `sh -c` gives exec's command none.
//
// - The directory is used only when it is this account's and not a
//   symbolic link, and made with mkdir (which fails on anything already
//   there): on the plain local adapter /tmp is shared with the host's other
//   accounts, who could see the token on a command line, and nothing they
//   made there is sourced or written through (umask 077: the files are
//   0600). The content is `export -p` of the same shell, in that shell's own
//   format (dash `export A='v'`, bash as sh `export A="v"`, bash
//   `declare -x A="v"`), so it reads back exactly.
// - PWD comes back from the file and `cd` enters it; OLDPWD is set back
//   after that cd, so `cd -` goes where it went before. A directory gone
//   since is said on stderr, and the call runs in the default directory.
// - The EXIT trap saves: PWD as `pwd` gives it (a script that unset or
//   assigned PWD saves where it is) and exported, bash's own read-only
//   variables unexported (restoring one is fatal in bash's POSIX mode),
//   written to `state.new` and renamed over `state`, so a write cut short
//   never leaves a file that cannot be sourced. `exit N` and
//   `set -e` run the trap, and the shell keeps its status N; `command`
//   keeps a failed write (no temporary directory) from ending the trap with
//   the redirection's status: it says why on stderr, and N stays.
//   `command pwd`, `command umask`, `command -p mv`: not the script's
//   functions of those names, nor its PATH.
// - HUP, INT and TERM (a timeout, a cancellation, the session's end) drop
//   the EXIT trap and die of the same signal: a call ended by a signal saves
//   nothing, in every shell (bash runs EXIT traps on a fatal signal, dash
//   and busybox do not). The status is the signal, as exec reports it. A
//   trapped signal waits for the foreground command, which the same
//   signal to the tree ends, or the SIGKILL after the grace period.
const WRAPPER = `__sandstream_dir=\${TMPDIR:-/tmp}/${SHELL_STATE_PREFIX}$1
__sandstream_script=$3
if [ -d "$__sandstream_dir" ] && [ ! -h "$__sandstream_dir" ] && [ -O "$__sandstream_dir" ] && [ -f "$__sandstream_dir/state" ]; then
  if [ "$2" = reset ]; then
    : > "$__sandstream_dir/state"
  else
    __sandstream_home=$PWD
    command . "$__sandstream_dir/state"
    __sandstream_oldpwd=\${OLDPWD-}
    __sandstream_hadold=\${OLDPWD+1}
    cd -- "\${PWD:-.}" 2>/dev/null || { printf '%s\\n' "sandstream shell: the saved directory \${PWD-} is gone; running in $__sandstream_home" >&2; cd -- "$__sandstream_home"; }
    if [ -n "$__sandstream_hadold" ]; then OLDPWD=$__sandstream_oldpwd; else unset OLDPWD; fi
  fi
fi
for __sandstream_signal in HUP INT TERM; do trap 'trap - EXIT '"$__sandstream_signal"'; kill -'"$__sandstream_signal"' $$' "$__sandstream_signal"; done
trap 'set +eux; PWD=$(command pwd); export PWD; if [ -n "\${BASH_VERSION-}" ]; then export -n BASHOPTS BASH_VERSINFO EUID PPID SHELLOPTS UID 2>/dev/null; fi; command umask 077; { [ -d "$__sandstream_dir" ] || command -p mkdir -m 700 -- "$__sandstream_dir"; } && [ ! -h "$__sandstream_dir" ] && [ -O "$__sandstream_dir" ] && command export -p >| "$__sandstream_dir/state.new" && command -p mv -f -- "$__sandstream_dir/state.new" "$__sandstream_dir/state" || printf "%s\\n" "sandstream shell: the state was not saved in $__sandstream_dir" >&2' EXIT
shift 3
eval "$__sandstream_script"`;

/** The command a shell call runs. */
export function shellArgv(token: string, mode: 'restore' | 'reset', script: string): string[] {
  return ['sh', '-c', WRAPPER, 'sh', token, mode, script];
}

/** How long the end of a session waits for the state file's removal. */
const DISCARD_TIMEOUT_MS = 5_000;

/**
 * The shell state of one MCP session: the token naming its file in the
 * sandbox, and whether a call is running. Calls do not overlap: a second
 * one while the first runs is refused (INVALID_STATE), as the order of two
 * calls a model sent together is not the order it meant.
 */
export class ShellSession {
  readonly token = randomBytes(16).toString('hex');
  #running: Promise<unknown> | undefined;
  #used = false;

  constructor(
    private readonly sandbox: Sandbox,
    private readonly tool: string,
  ) {}

  /** Runs one validated call; never rejects. */
  async call(input: ShellInput, settings: ExecSettings, call: ExecCall): Promise<CallToolResult> {
    if (this.#running !== undefined) {
      return failure(new InvalidState(`${this.tool} is still running a command of this session; calls of ${this.tool} run one at a time: wait for its result and call again (a command that may run long: ${settings.startTool})`));
    }
    this.#used = true;
    const argv = shellArgv(this.token, input.reset === true ? 'reset' : 'restore', input.command);
    const running = execute(this.sandbox, { argv, timeout: input.timeout, stdin: input.stdin }, settings, call);
    this.#running = running;
    try {
      return await running;
    } finally {
      this.#running = undefined;
    }
  }

  /** Removes the state directory, best effort (the session's end; a closed sandbox takes its /tmp along anyway). */
  async discard(): Promise<void> {
    if (!this.#used) return;
    // A call still running was aborted with the session: its shell dies of the signal and saves nothing, but one that was ending may still write.
    await this.#running;
    const remove = `rm -rf -- "\${TMPDIR:-/tmp}/${SHELL_STATE_PREFIX}$1"`;
    await this.sandbox.run(['sh', '-c', remove, 'sh', this.token], { timeout: DISCARD_TIMEOUT_MS }).catch(() => undefined);
  }
}
