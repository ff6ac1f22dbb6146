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
import { StdinClosed } from '@sandstream/types';
import { STDIN_PROBE_SH } from './generated/programs.js';
import type { RemoteTransport } from './transport.js';

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

/**
 * Whether a process of the command tagged `id` still holds its standard input, asked with the probe
 * through `transport.run` as `user`; true also when that cannot be learned now (the probe failed),
 * so that a slow reader is never taken for a closed pipe.
 *
 * @example
 * ```ts
 * import { stdinHeld, type RemoteTransport } from '@sandstream/remote';
 * declare const transport: RemoteTransport;
 * if (!(await stdinHeld(transport, '/bin/sh', 'c1', undefined, 15_000))) console.log('closed for good');
 * ```
 */
export async function stdinHeld(transport: RemoteTransport, shell: string, id: string, user: string | undefined, timeoutMs: number): Promise<boolean> {
  try {
    const { exitCode } = await transport.run(stdinProbeArgv(shell, id), { user, timeoutMs });
    return exitCode === STDIN_HELD;
  } catch {
    return true;
  }
}

/** The first wait on a write the backend has not taken up before the probe runs, in ms; it doubles up to {@link PROBE_LAST_MS}. */
const PROBE_FIRST_MS = 100;
const PROBE_LAST_MS = 2_000;

/**
 * Waits for a write to standard input that a backend may hold back: resolves with `written`;
 * while it waits, asks `held` (usually {@link stdinHeld}) after 100 ms, then after waits doubling up
 * to 2 s. A held-back write is a slow reader or a closed pipe, which only the sandbox can tell.
 *
 * @throws StdinClosed once `ended()` says the command ended, or `held` finds nothing holding the pipe.
 *
 * @example
 * ```ts
 * import { untilWritten } from '@sandstream/remote';
 * declare const written: Promise<void>;
 * await untilWritten(written, () => false, async () => true);
 * ```
 */
export async function untilWritten(written: Promise<void>, ended: () => boolean, held: () => Promise<boolean>): Promise<void> {
  for (let waitMs = PROBE_FIRST_MS; ; waitMs = Math.min(2 * waitMs, PROBE_LAST_MS)) {
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), waitMs)));
    const outcome = await Promise.race([written.then(() => 'done' as const), slow]).finally(() => clearTimeout(timer));
    if (outcome === 'done') return;
    if (ended()) throw new StdinClosed('standard input is closed: the command ended');
    if (!(await held())) throw new StdinClosed('standard input is closed: nothing of the command holds it open');
  }
}
