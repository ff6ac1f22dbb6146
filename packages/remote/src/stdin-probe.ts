/**
 * Whether anything of a command still holds its standard input open, asked
 * inside the sandbox when a write to it stalls: for a transport whose
 * backend never reports a closed pipe.
 *
 * Docker's exec is one: dockerd's copy into the process's pipe stops on
 * `EPIPE` and then simply stops reading the hijacked connection, so a write
 * to a command that closed its standard input would wait forever. A write
 * the backend has not taken up is checked with this helper, which looks at
 * every process carrying the command's tag: a pipe one of them holds the
 * read end of while none of them holds its write end is fed from outside
 * the tree, which is the command's standard input (a pipe between two of
 * the tree's own processes has both ends inside). Exit 0: there is none,
 * standard input is closed for good (the write is `StdinClosed`); exit
 * {@link STDIN_HELD}: there is one, the command is only slow to read. The
 * program is `src/sh/stdin-probe.sh`; it needs `readlink`, `grep -z` and
 * `/proc/<pid>/fdinfo` (Linux 2.6.22).
 */
import { STDIN_PROBE_SH } from './generated/programs.js';

/** The probe, for POSIX sh. */
export const STDIN_PROBE = STDIN_PROBE_SH;

/** What the probe is called in its own argv. */
export const STDIN_PROBE_NAME = 'sandstream-stdin-probe';

/** The probe's exit when a process of the command still holds the pipe. */
export const STDIN_HELD = 3;

/**
 * The probe's argv for the command tagged `id` (the driver's `StartRequest.id`), run as the
 * command's account through the transport's `run`.
 *
 * @example
 * ```ts
 * import { STDIN_HELD, stdinProbeArgv, type RemoteTransport } from '@sandstream/remote';
 * async function stdinClosed(transport: RemoteTransport, id: string): Promise<boolean> {
 *   const { exitCode } = await transport.run(stdinProbeArgv('/bin/sh', id), { timeoutMs: 15_000 });
 *   return exitCode !== STDIN_HELD;
 * }
 * ```
 */
export function stdinProbeArgv(shell: string, id: string): string[] {
  return [shell, '-c', STDIN_PROBE, STDIN_PROBE_NAME, id];
}
