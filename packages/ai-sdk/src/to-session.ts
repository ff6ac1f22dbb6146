// Any Sandstream Sandbox as the AI SDK's SandboxSession.
import { constants } from 'node:os';
import type {
  Experimental_SandboxProcess as SandboxProcess,
  Experimental_SandboxRunOptions as SandboxRunOptions,
  Experimental_SandboxSession as SandboxSession,
  Experimental_SandboxSpawnOptions as SandboxSpawnOptions,
  Experimental_WritableSandboxProcess as WritableSandboxProcess,
} from '@ai-sdk/provider-utils';
import { AbortError, CapabilityNotSupported, hasCapability, type ExecResult, type Process, type Sandbox } from '@sandstream/types';
import { splitOutput, stdinStream } from './process-streams.js';
import { sessionFiles, type CommandRunner } from './session-files.js';

/** Options of {@link toSandboxSession}. */
export interface ToSandboxSessionOptions {
  /**
   * The session's base directory: where commands start when no
   * `workingDirectory` is given, and what relative file paths resolve
   * against. Absent: the sandbox's default working directory.
   */
  readonly cwd?: string;
  /** The session's `description`, for the model's instructions. Absent: one naming the sandbox and its base directory. */
  readonly description?: string;
  /** The largest file `readFile`, `readBinaryFile` and `readTextFile` return, in bytes (default 64 MiB); a larger one rejects. */
  readonly maxFileBytes?: number;
}

/**
 * The shell's exit status of a command a signal ended (128 + the signal's
 * number): the interface has only `exitCode: number`, and this is what a
 * shell would report.
 */
export function exitCodeOf(result: Pick<ExecResult, 'exitCode' | 'signal'>): number {
  if (result.exitCode !== null) return result.exitCode;
  const number = result.signal === null ? undefined : constants.signals[result.signal as NodeJS.Signals];
  return number === undefined ? 1 : 128 + number;
}

/** The abort's reason when the caller's signal ended the command, as the interface asks; the error itself otherwise. */
function rethrow(error: unknown, signal: AbortSignal | undefined): never {
  if (error instanceof AbortError && signal?.aborted === true) throw signal.reason;
  throw error;
}

function commandOptions(base: string | undefined, options: SandboxRunOptions): { cwd?: string; env?: Record<string, string>; signal?: AbortSignal } {
  const cwd = options.workingDirectory ?? base;
  return {
    ...(cwd !== undefined && { cwd: relativeTo(base, cwd) }),
    ...(options.env !== undefined && { env: options.env }),
    ...(options.abortSignal !== undefined && { signal: options.abortSignal }),
  };
}

/** A relative working directory resolved against the session's base, as the interface says; POSIX paths. */
function relativeTo(base: string | undefined, path: string): string {
  if (base === undefined || path.startsWith('/')) return path;
  return `${base.replace(/\/+$/, '')}/${path}`;
}

/**
 * Ends the command's whole tree: SIGTERM (and SIGCONT, for a stopped one),
 * then, if it is still there after the grace period, the Process's dispose
 * (SIGKILL). Until then its output still flows, so what a TERM handler
 * prints is not lost; resolves once the command is gone. Idempotent.
 */
async function terminate(proc: Process, graceMs: number): Promise<void> {
  if (proc.exited) return;
  const exited = proc.wait().then(
    () => true,
    () => true,
  );
  await proc.kill('SIGTERM').catch(() => undefined);
  await proc.kill('SIGCONT').catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, graceMs, false)));
  const gone = await Promise.race([exited, graceOver]).finally(() => clearTimeout(timer));
  if (!gone) await proc[Symbol.asyncDispose]();
}

/** The handle of a started `proc`; `signal` is the caller's abortSignal, whose reason `wait()` rejects with. */
function sessionProcess(
  proc: Process,
  { stdout, stderr }: ReturnType<typeof splitOutput>,
  signal: AbortSignal | undefined,
  graceMs: number,
): SandboxProcess | WritableSandboxProcess {
  return {
    ...(proc.pid !== undefined && { pid: proc.pid }),
    stdout,
    stderr,
    ...(proc.stdin !== null && { stdin: stdinStream(proc) }),
    async wait() {
      try {
        return { exitCode: exitCodeOf(await proc.wait()) };
      } catch (error) {
        rethrow(error, signal);
      }
    },
    kill: () => terminate(proc, graceMs),
  };
}

/**
 * Any Sandstream {@link Sandbox} as an AI SDK `SandboxSession`, to pass as
 * `experimental_sandbox` to `generateText`, `streamText` or an agent.
 *
 * - `spawn` and `run` execute `command` with `sh -c` in the sandbox;
 *   `spawn`'s handle streams bytes, `kill()` ends the whole process tree
 *   with the sandbox's grace period, and `abortSignal` does the same.
 * - A command a signal ended reports the shell's `128 + n` as `exitCode`.
 * - The file methods are commands in the sandbox (`cat`, `sh`, `wc`, `rm`,
 *   `mkdir`), so they work on any adapter whose sandbox has a POSIX shell;
 *   the writing ones need the `stdin` capability and reject without it.
 *
 * The sandbox stays the caller's: closing it is not the session's job.
 *
 * @example
 * ```ts
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * import { toSandboxSession } from '@sandstream/ai-sdk';
 * const session = toSandboxSession(createLocalSandbox(), { cwd: '/tmp' });
 * const { exitCode, stdout } = await session.run({ command: 'echo hi' });
 * ```
 */
export function toSandboxSession(sandbox: Sandbox, options: ToSandboxSessionOptions = {}): SandboxSession {
  const base = options.cwd;
  const graceMs = sandbox.termination?.graceMs ?? 2_000;
  const runner: CommandRunner = {
    sandbox,
    run: (argv, more) => sandbox.run(argv, { ...(base !== undefined && { cwd: base }), ...more }),
    stream: (argv, more) => sandbox.stream(argv, { ...(base !== undefined && { cwd: base }), ...more }),
  };
  async function spawn(spawnOptions: SandboxSpawnOptions): Promise<SandboxProcess | WritableSandboxProcess> {
    // The interface: an implementation without writable stdin rejects before starting the command.
    if (spawnOptions.stdin === true && !hasCapability(sandbox.capabilities, 'stdin')) {
      throw new CapabilityNotSupported('stdin', 'spawn with stdin: true');
    }
    const proc = sandbox.stream(['sh', '-c', spawnOptions.command], {
      ...commandOptions(base, spawnOptions),
      stdin: spawnOptions.stdin === true ? 'pipe' : 'ignore',
    });
    // Read from now on, so output is never held back by a start that is slow to confirm.
    const streams = splitOutput(proc);
    try {
      await proc.started();
    } catch (error) {
      rethrow(error, spawnOptions.abortSignal);
    }
    return sessionProcess(proc, streams, spawnOptions.abortSignal, graceMs);
  }
  return {
    description:
      options.description ??
      `A Sandstream sandbox (adapter "${sandbox.name}") with a POSIX shell; commands run with \`sh -c\`` +
        (base === undefined ? '.' : ` and start in ${base}, which relative paths resolve against.`),
    spawn: spawn as SandboxSession['spawn'],
    async run(runOptions) {
      try {
        const result = await sandbox.run(['sh', '-c', runOptions.command], commandOptions(base, runOptions));
        return { exitCode: exitCodeOf(result), stdout: result.stdoutText, stderr: result.stderrText };
      } catch (error) {
        rethrow(error, runOptions.abortSignal);
      }
    },
    ...sessionFiles(runner, options.maxFileBytes ?? 64 * 1024 * 1024),
  };
}
