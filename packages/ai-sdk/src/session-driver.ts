// One Sandstream command on an AI SDK SandboxSession: the ProcessDriver that
// fromSandboxSession hands to the shared runtime.
import { constants } from 'node:os';
import type {
  Experimental_SandboxProcess as SandboxProcess,
  Experimental_WritableSandboxProcess as WritableSandboxProcess,
} from '@ai-sdk/provider-utils';
import { InvalidArgument, SpawnFailed, StdinClosed, TransportError, type Signal, type StreamName } from '@sandstream/types';
import type { SessionCommands } from './session-commands.js';
import type { CommandSpec, DriverEvents, ExitStatus, ProcessDriver, StartedProcess } from '@sandstream/types/runtime';

/**
 * `argv` as one POSIX shell line, each word single-quoted: the interface
 * takes a command string only. Spawned as `exec <line>`, so the shell
 * becomes the command (its pid, its stdin) instead of waiting for it.
 */
export function shellLine(argv: readonly string[]): string {
  return argv.map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(' ');
}

/** The signal a shell's `128 + n` status names, if any. */
function signalOf(exitCode: number): string | undefined {
  if (exitCode <= 128) return undefined;
  return Object.entries(constants.signals).find(([, n]) => n === exitCode - 128)?.[0];
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** How fromSandboxSession's driver behaves. */
export interface SessionDriverSettings {
  /** Check that `argv[0]` resolves and the cwd exists before spawning, so a missing binary is `SpawnFailed`, not exit 127. */
  readonly checkSpawn: boolean;
}

export class SessionDriver implements ProcessDriver {
  #proc: SandboxProcess | WritableSandboxProcess | undefined;
  #stdin: WritableStreamDefaultWriter<Uint8Array> | undefined;
  readonly #readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
  /** Set by the terminal event or release(): nothing is reported after it. */
  #ended = false;
  /** The signal this driver turned into kill(), which names a `128 + n` status as a death by that signal. */
  #killedWith: Signal | undefined;
  #gate: { promise: Promise<void>; open: () => void } | undefined;

  constructor(
    private readonly session: SessionCommands,
    private readonly command: CommandSpec,
    private readonly settings: SessionDriverSettings,
  ) {}

  async start(events: DriverEvents): Promise<StartedProcess> {
    const { argv, cwd, env } = this.command;
    const common = { ...(cwd !== undefined && { workingDirectory: cwd }), ...(Object.keys(env).length > 0 && { env: { ...env } }) };
    if (this.settings.checkSpawn) await this.#checkSpawn(common);
    let proc: SandboxProcess | WritableSandboxProcess;
    try {
      proc = await this.session.spawn({ command: `exec ${shellLine(argv)}`, ...common, stdin: this.command.stdin === 'pipe' });
    } catch (error) {
      throw new SpawnFailed(argv, message(error), { cause: error });
    }
    this.#proc = proc;
    if ('stdin' in proc) this.#stdin = proc.stdin.getWriter();
    void this.#follow(proc, events);
    return proc.pid === undefined ? {} : { pid: proc.pid };
  }

  async #checkSpawn(common: { workingDirectory?: string; env?: Record<string, string> }): Promise<void> {
    const argv0 = this.command.argv[0]!;
    let exitCode: number;
    try {
      ({ exitCode } = await this.session.run({ command: `command -v ${shellLine([argv0])} >/dev/null 2>&1`, ...common }));
    } catch (error) {
      throw new SpawnFailed(this.command.argv, message(error), { cause: error });
    }
    if (exitCode !== 0) throw new SpawnFailed(this.command.argv, 'not found, or not executable');
  }

  /** Reports both streams' bytes, then the exit once both ended and wait() resolved. */
  async #follow(proc: SandboxProcess, events: DriverEvents): Promise<void> {
    try {
      await Promise.all([this.#pump(proc.stdout, 'stdout', events), this.#pump(proc.stderr, 'stderr', events)]);
      const { exitCode } = await proc.wait();
      if (this.#ended) return;
      this.#ended = true;
      events.exit(this.#status(exitCode));
    } catch (error) {
      if (this.#ended) return;
      this.#ended = true;
      events.fail(new TransportError(`the sandbox session lost the command: ${message(error)}`, { cause: error }));
    }
  }

  async #pump(stream: ReadableStream<Uint8Array>, name: StreamName, events: DriverEvents): Promise<void> {
    const reader = stream.getReader();
    this.#readers.push(reader);
    for (;;) {
      if (this.#gate !== undefined) await this.#gate.promise;
      const { value, done } = await reader.read();
      if (done || this.#ended) return;
      if (value.byteLength > 0) events.output(name, value);
    }
  }

  #status(exitCode: number): ExitStatus {
    if (!Number.isInteger(exitCode) || exitCode < 0 || exitCode > 255) {
      throw new Error(`wait() reported exit code ${exitCode}, outside 0-255`);
    }
    const signal = this.#killedWith === undefined ? undefined : signalOf(exitCode);
    return signal === undefined ? { exitCode, signal: null } : { exitCode: null, signal };
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    if (this.#stdin === undefined || this.#ended) throw new StdinClosed('standard input is closed');
    try {
      await this.#stdin.write(data);
    } catch (error) {
      // The stream refused the bytes: the interface has no "delivery unknown", so the pipe counts as closed.
      throw new StdinClosed(`standard input is closed: ${message(error)}`, { cause: error });
    }
  }

  async closeStdin(): Promise<void> {
    await this.#stdin?.close().catch(() => undefined);
  }

  /**
   * The interface's only signal is `kill()`, without a name: SIGTERM and
   * SIGKILL both become it, SIGCONT (sent after SIGTERM in every teardown)
   * is a no-op, and any other signal is refused.
   */
  async signal(signal: Signal): Promise<void> {
    if (signal === 'SIGCONT') return;
    if (signal !== 'SIGTERM' && signal !== 'SIGKILL') {
      throw new InvalidArgument('signal', `an AI SDK sandbox session can only kill() a process, not send it ${signal}`);
    }
    this.#killedWith ??= signal;
    await this.#proc?.kill();
  }

  pause(): void {
    if (this.#gate !== undefined) return;
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.#gate = { promise, open };
  }

  resume(): void {
    const gate = this.#gate;
    this.#gate = undefined;
    gate?.open();
  }

  async release(): Promise<void> {
    const wasEnded = this.#ended;
    this.#ended = true;
    this.resume();
    // Also when the runtime gave up: what may still run is killed, the streams let go.
    if (!wasEnded) await Promise.resolve(this.#proc?.kill()).catch(() => undefined);
    for (const reader of this.#readers) reader.cancel().catch(() => undefined);
  }
}
