import { Code } from '@connectrpc/connect';
import { SpawnFailed, StdinClosed, TransportError, type Signal } from '@sandstream/types';
import type { CommandSpec, DriverEvents, ExitStatus, ProcessDriver, StartedProcess } from '@sandstream/types/runtime';
import { signalFromStatus } from './emulator/status.js';
import { describe, isDaemonAnswer, type ProcessClient } from './connection.js';
import type { ProcessEvent, StartResponse } from './gen/envd-process_pb.js';
import { LAUNCH, LAUNCH_FAILED, LAUNCH_OK, LAUNCH_PREFIX, SIGNAL, WATCH } from './scripts.js';

/** What every driver of one sandbox shares. */
export interface E2BDriverSettings {
  readonly client: ProcessClient;
  /** Variables added to envd's environment for every command; a command's own `env` is merged over them. */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory of commands that name none (undefined: envd's default, the user's home). */
  readonly cwd: string | undefined;
  /** `setsid` inside the sandbox. */
  readonly setsidPath: string;
  /** A POSIX shell inside the sandbox. */
  readonly shellPath: string;
  /** Interval envd is asked to send keepalives at on quiet streams, in seconds. */
  readonly keepaliveSeconds: number;
  /** A stream with neither an event nor a keepalive for this long is taken as broken. */
  readonly stallMs: number;
  /** Bound on the helper commands (signals, liveness checks) and unary calls that have one. */
  readonly requestTimeoutMs: number;
}

/** Largest stdin payload sent in one SendInput request. */
const STDIN_CHUNK = 1024 * 1024;

const latin1 = new TextDecoder('latin1');
const utf8 = new TextDecoder();

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}

function exitStatusOf(end: { exitCode: number; exited: boolean; status: string }): ExitStatus {
  if (end.exited) return { exitCode: end.exitCode, signal: null };
  // envd reports a signal death as exit code -1 and a status such as
  // "signal: killed". An unknown word would be a newer envd's; SIGKILL is
  // the only signal envd itself sends, so it is the reading least likely wrong.
  return { exitCode: null, signal: signalFromStatus(end.status) ?? 'SIGKILL' };
}

type StreamEvent = ProcessEvent['event'];

/**
 * Reads a server stream of process events with a watchdog: an event or a
 * keepalive must arrive within `stallMs` unless reading is paused.
 */
class EventReader {
  private readonly iterator: AsyncIterator<StartResponse>;
  private timer: NodeJS.Timeout | undefined;
  stalled = false;

  constructor(
    stream: AsyncIterable<StartResponse>,
    private readonly abort: AbortController,
    private readonly stallMs: number,
  ) {
    this.iterator = stream[Symbol.asyncIterator]();
  }

  async next(): Promise<StreamEvent | undefined> {
    this.timer = setTimeout(() => {
      this.stalled = true;
      this.abort.abort(new Error(`no event and no keepalive for ${this.stallMs} ms`));
    }, this.stallMs);
    try {
      const result = await this.iterator.next();
      return result.done ? undefined : result.value.event?.event;
    } finally {
      clearTimeout(this.timer);
    }
  }
}

/**
 * One command over envd's process service. The command runs as
 * `setsid sh -c LAUNCH argv...`: it leads its own session and process
 * group, whose id is the pid of the start event (and the Process's
 * `commandId`). Signals go to the whole group through a helper command in
 * the sandbox, since envd signals one pid and knows only SIGTERM and
 * SIGKILL. When envd reports the leader's end, a second helper watches the
 * group: `exit` is reported once nothing of it is alive, `leaderExited`
 * first when something outlived the leader (the runtime then winds it
 * down through `signal()`).
 */
export class E2BDriver implements ProcessDriver {
  private events: DriverEvents | undefined;
  private readonly controllers = new Set<AbortController>();
  private pid: number | undefined;
  private launched = false;
  private startSettled = false;
  private resolveStart: ((started: StartedProcess) => void) | undefined;
  private rejectStart: ((error: Error) => void) | undefined;
  private stderrHead: Uint8Array = new Uint8Array(0);
  private readonly early: Uint8Array[] = [];
  private terminal = false;
  private released = false;
  private paused = false;
  private resumeWaiter: (() => void) | undefined;

  constructor(
    private readonly command: CommandSpec,
    private readonly settings: E2BDriverSettings,
  ) {}

  start(events: DriverEvents): Promise<StartedProcess> {
    this.events = events;
    const { command, settings } = this;
    const abort = this.controller();
    const cwd = command.cwd ?? settings.cwd;
    const stream = settings.client.start(
      {
        process: {
          cmd: settings.setsidPath,
          args: [settings.shellPath, '-c', LAUNCH, 'sandstream', ...command.argv],
          envs: { ...settings.env, ...command.env },
          ...(cwd === undefined ? {} : { cwd }),
        },
        stdin: command.stdin === 'pipe',
      },
      // No Connect-Timeout-Ms: envd would SIGKILL the leader alone when it
      // elapses. The runtime's timeout bounds the command, through signal().
      { signal: abort.signal, headers: { 'Keepalive-Ping-Interval': String(settings.keepaliveSeconds) } },
    );
    const started = new Promise<StartedProcess>((resolve, reject) => {
      this.resolveStart = resolve;
      this.rejectStart = reject;
    });
    void this.pump(new EventReader(stream, abort, settings.stallMs));
    return started;
  }

  private controller(): AbortController {
    const controller = new AbortController();
    this.controllers.add(controller);
    return controller;
  }

  private async pump(reader: EventReader): Promise<void> {
    try {
      for (;;) {
        if (this.paused) await new Promise<void>((resolve) => (this.resumeWaiter = resolve));
        if (this.released) return;
        const event = await reader.next();
        if (event === undefined) throw new Error('the event stream ended without an end event');
        switch (event.case) {
          case 'start':
            this.pid = event.value.pid;
            break;
          case 'data':
            if (event.value.output.case === 'stdout' || event.value.output.case === 'stderr') {
              this.onData(event.value.output.case, event.value.output.value);
            }
            break;
          case 'end':
            await this.onEnd(exitStatusOf(event.value), event.value.status);
            return;
          default:
            // keepalive: the watchdog was reset by its arrival.
            break;
        }
      }
    } catch (error) {
      if (this.released || this.terminal) return;
      await this.broken(reader.stalled ? new Error(`no event and no keepalive for ${this.settings.stallMs} ms`) : error);
    }
  }

  private onData(stream: 'stdout' | 'stderr', data: Uint8Array): void {
    if (this.terminal) return;
    if (this.launched) {
      this.events!.output(stream, data);
      return;
    }
    if (stream === 'stdout') {
      // Cannot come before the launcher's report in time, but envd reads the
      // two pipes independently: keep it until the report is in.
      this.early.push(data);
      return;
    }
    this.stderrHead = concat(this.stderrHead, data);
    const head = latin1.decode(this.stderrHead.subarray(0, 64));
    const plausible = head.length < LAUNCH_PREFIX.length ? LAUNCH_PREFIX.startsWith(head) : head.startsWith(LAUNCH_PREFIX);
    if (!plausible) {
      this.startFailed(new SpawnFailed(this.command.argv, `the launcher failed: ${utf8.decode(this.stderrHead).trim()}`));
      return;
    }
    const newline = this.stderrHead.indexOf(10);
    if (newline < 0) return;
    const line = latin1.decode(this.stderrHead.subarray(0, newline + 1));
    const rest = this.stderrHead.subarray(newline + 1);
    if (line === LAUNCH_OK) {
      this.launched = true;
      this.startSettled = true;
      const started = { pid: this.pid!, commandId: String(this.pid) };
      this.resolveStart!(started);
      for (const chunk of this.early.splice(0)) this.events!.output('stdout', chunk);
      if (rest.byteLength > 0) this.events!.output('stderr', rest.slice());
      this.stderrHead = new Uint8Array(0);
      return;
    }
    const argv0 = JSON.stringify(this.command.argv[0] ?? '');
    const reason = line.startsWith(LAUNCH_FAILED) ? line.slice(LAUNCH_FAILED.length, -1) : line.trim();
    this.startFailed(
      new SpawnFailed(
        this.command.argv,
        reason === 'ENOENT' ? `ENOENT: no such executable ${argv0}` : `${reason}: ${argv0} is not an executable file`,
      ),
    );
  }

  /** The start is refused; nothing more is reported. */
  private startFailed(error: Error): void {
    if (this.startSettled) return;
    this.startSettled = true;
    this.terminal = true;
    this.rejectStart!(error);
  }

  private async onEnd(status: ExitStatus, description: string): Promise<void> {
    if (this.terminal) return;
    if (!this.launched) {
      const said = utf8.decode(this.stderrHead).trim();
      this.startFailed(
        new SpawnFailed(this.command.argv, `the launcher ended (${description}) before the command ran${said === '' ? '' : `: ${said}`}`),
      );
      return;
    }
    // The leader was reaped and envd closed the pipes: every byte is in.
    // Now make sure nothing of the group lives on.
    try {
      let lingering = false;
      await this.helper(['-c', WATCH, 'sandstream-watch', String(this.pid)], (text) => {
        if (!lingering && text.startsWith('linger\n')) {
          lingering = true;
          this.events!.leaderExited(status);
        }
      }, false);
      if (this.terminal) return;
      this.terminal = true;
      this.events!.exit(status);
    } catch (error) {
      if (this.released || this.terminal) return;
      this.terminal = true;
      this.events!.fail(
        new TransportError(`lost track of command ${this.pid} after its leader ended: ${describe(error)}`, { cause: error }),
      );
    }
  }

  /** The event stream broke: the command's fate is unknown. */
  private async broken(error: unknown): Promise<void> {
    if (this.pid === undefined) {
      // No start event: envd either refused (a definite answer) or the
      // outcome is unknown. Never retried either way.
      if (isDaemonAnswer(error) && error.code === Code.InvalidArgument) {
        this.startFailed(new SpawnFailed(this.command.argv, error.rawMessage, { cause: error }));
      } else {
        this.startFailed(
          new TransportError(`the start of ${JSON.stringify(this.command.argv[0] ?? '')} has an unknown outcome: ${describe(error)}`, {
            cause: error,
          }),
        );
      }
      return;
    }
    // The command may be running. Kill its group (best effort, bounded) so
    // that nothing is left behind, then report the broken link.
    await this.signalGroup('SIGKILL').catch(() => undefined);
    const failure = new TransportError(`the event stream of command ${this.pid} broke: ${describe(error)}`, { cause: error });
    if (!this.startSettled) {
      this.startFailed(failure);
      return;
    }
    if (this.terminal) return;
    this.terminal = true;
    this.events!.fail(failure);
  }

  /**
   * Runs a shell helper in the sandbox and resolves once it ended, with its
   * standard output. `bounded`: the whole run has `requestTimeoutMs`; the
   * watcher is unbounded but kept honest by keepalives.
   */
  private async helper(args: string[], onStdout: ((text: string) => void) | undefined, bounded: boolean): Promise<string> {
    const abort = this.controller();
    const timer = bounded
      ? setTimeout(() => abort.abort(new Error(`no answer within ${this.settings.requestTimeoutMs} ms`)), this.settings.requestTimeoutMs)
      : undefined;
    try {
      const stream = this.settings.client.start(
        { process: { cmd: this.settings.shellPath, args, envs: {} }, stdin: false },
        { signal: abort.signal, headers: { 'Keepalive-Ping-Interval': String(this.settings.keepaliveSeconds) } },
      );
      const reader = new EventReader(stream, abort, this.settings.stallMs);
      let text = '';
      for (;;) {
        const event = await reader.next();
        if (event === undefined) throw new Error('the helper stream ended without an end event');
        if (event.case === 'data' && event.value.output.case === 'stdout') {
          text += utf8.decode(event.value.output.value);
          onStdout?.(text);
        } else if (event.case === 'end') {
          if (!event.value.exited || event.value.exitCode !== 0) {
            throw new Error(`a helper command failed (${event.value.status})`);
          }
          return text;
        }
      }
    } finally {
      clearTimeout(timer);
      abort.abort();
      this.controllers.delete(abort);
    }
  }

  private async signalGroup(signal: Signal): Promise<void> {
    if (this.pid === undefined) return;
    await this.helper(['-c', SIGNAL, 'sandstream-signal', signal.slice(3), String(this.pid)], undefined, true);
  }

  async signal(signal: Signal): Promise<void> {
    try {
      await this.signalGroup(signal);
    } catch (error) {
      throw new TransportError(`could not deliver ${signal} to command ${this.pid}: ${describe(error)}`, { cause: error });
    }
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    const pid = this.pid!;
    for (let offset = 0; offset < data.byteLength || offset === 0; offset += STDIN_CHUNK) {
      const part = data.subarray(offset, offset + STDIN_CHUNK);
      try {
        await this.settings.client.sendInput({
          process: { selector: { case: 'pid', value: pid } },
          input: { input: { case: 'stdin', value: part } },
        });
      } catch (error) {
        // envd answers NotFound once the command is gone and Internal when
        // the pipe is closed or the command stopped reading: nothing of this
        // request was delivered. Anything else leaves delivery uncertain, and
        // a write is never sent twice.
        if (isDaemonAnswer(error) && (error.code === Code.NotFound || error.code === Code.Internal)) {
          throw new StdinClosed(`standard input is closed: ${error.rawMessage}`, { cause: error });
        }
        throw new TransportError(`the delivery of ${data.byteLength} bytes of standard input is uncertain: ${describe(error)}`, {
          cause: error,
        });
      }
      if (data.byteLength === 0) break;
    }
  }

  async closeStdin(): Promise<void> {
    try {
      await this.settings.client.closeStdin({ process: { selector: { case: 'pid', value: this.pid! } } });
    } catch (error) {
      // Gone or already closed: closed either way.
      if (isDaemonAnswer(error)) return;
      throw new TransportError(`could not close standard input of command ${this.pid}: ${describe(error)}`, { cause: error });
    }
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    const waiter = this.resumeWaiter;
    this.resumeWaiter = undefined;
    waiter?.();
  }

  async release(): Promise<void> {
    this.released = true;
    this.terminal = true;
    this.resume();
    for (const controller of this.controllers) controller.abort();
    this.controllers.clear();
  }
}
