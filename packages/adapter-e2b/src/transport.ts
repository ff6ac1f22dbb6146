/**
 * envd's process service as a `RemoteTransport` of `@sandstream/remote`:
 * one `Start` stream per process, `SendSignal` for SIGTERM to it (envd
 * knows TERM and KILL only, and signals that one pid), `SendInput` and
 * `CloseStdin`, and helpers as short `Start`s of their own.
 *
 * On a terminal (spec 1.5, `StartRequest.pty`): `Start` with `pty` (its
 * size), the terminal's bytes as `pty` data events (all of them `stdout`),
 * input as `SendInput` with `pty` bytes, never a `CloseStdin` (end-of-file is
 * typed: the runtime writes 0x04), and `Update` with `pty` to resize.
 */
import { Code } from '@connectrpc/connect';
import { StdinClosed, TransportError } from '@sandstream/types';
import type { HelperOptions, HelperResult, RemoteTransport, StartRequest, TransportEnd, TransportProcess, TransportSink } from '@sandstream/remote';
import { basicAuth, describeEnvdError, isDaemonAnswer, neverSent, type ProcessClient } from './connection.js';
import { Signal as EnvdSignal, type ProcessEvent, type StartResponse } from './gen/envd-process_pb.js';
import { exitStatusOf } from './status.js';

/** What the transport of one sandbox handle needs. */
export interface EnvdTransportSettings {
  readonly client: ProcessClient;
  /** Interval envd is asked to send keepalives at on quiet streams, in seconds. */
  readonly keepaliveSeconds: number;
  /** A stream with neither an event nor a keepalive for this long is broken, in ms. */
  readonly stallMs: number;
  /** Bound on unary calls (a signal), in ms. */
  readonly requestTimeoutMs: number;
}

/** Largest stdin payload sent in one SendInput request. */
export const STDIN_CHUNK = 1024 * 1024;

type StreamEvent = ProcessEvent['event'];

/** Headers naming the account a request acts as. */
function authOf(user: string | undefined): Record<string, string> {
  return user === undefined ? {} : { Authorization: basicAuth(user) };
}

/** envd through its process service. */
export class EnvdTransport implements RemoteTransport {
  /** envd's SendSignal knows SIGTERM and SIGKILL; the driver sends SIGKILL to the tree itself. */
  readonly signals: ReadonlySet<string> = new Set(['SIGTERM']);
  /** Spec 1.5: envd starts a process on a terminal (whether commands may ask is the manifest's `pty`). */
  readonly pty = true;

  constructor(readonly settings: EnvdTransportSettings) {}

  start(request: StartRequest, sink: TransportSink): TransportProcess {
    return new EnvdProcess(this.settings, request, sink);
  }

  async run(argv: readonly string[], options: HelperOptions): Promise<HelperResult> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    try {
      const stream = this.settings.client.start(
        { process: { cmd: argv[0] ?? '', args: argv.slice(1), envs: {}, cwd: '/' }, stdin: false },
        { signal: abort.signal, headers: { 'Keepalive-Ping-Interval': String(this.settings.keepaliveSeconds), ...authOf(options.user) } },
      );
      for await (const response of stream) {
        const event = response.event?.event;
        if (event?.case === 'end') return { exitCode: event.value.exited ? event.value.exitCode : null };
      }
      throw new Error('the helper stream ended without an end event');
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  }
}

/** One `Start` stream, read with a watchdog: an event or a keepalive must arrive within `stallMs` unless paused. */
class EnvdProcess implements TransportProcess {
  readonly #settings: EnvdTransportSettings;
  readonly #sink: TransportSink;
  readonly #auth: Record<string, string>;
  readonly #user: string | undefined;
  readonly #pty: { readonly cols: number; readonly rows: number } | undefined;
  readonly #abort = new AbortController();
  #pid: number | undefined;
  #closed = false;
  #paused = false;
  #resumed: (() => void) | undefined;

  constructor(settings: EnvdTransportSettings, request: StartRequest, sink: TransportSink) {
    this.#settings = settings;
    this.#sink = sink;
    this.#user = request.user;
    this.#auth = authOf(request.user);
    this.#pty = request.pty;
    const [cmd = '', ...args] = request.argv;
    const stream = settings.client.start(
      {
        process: { cmd, args, envs: { ...request.env }, ...(request.cwd === undefined ? {} : { cwd: request.cwd }) },
        // A terminal is its own input: envd keeps no pipe beside it.
        ...(request.pty === undefined ? { stdin: request.stdin } : { pty: { size: { cols: request.pty.cols, rows: request.pty.rows } }, stdin: false }),
        tag: request.id,
      },
      // No Connect-Timeout-Ms: envd would SIGKILL the supervisor alone when it elapses. The
      // runtime's timeout bounds the command, through the driver's signals.
      { signal: this.#abort.signal, headers: { 'Keepalive-Ping-Interval': String(settings.keepaliveSeconds), ...this.#auth } },
    );
    void this.#pump(stream[Symbol.asyncIterator]());
  }

  async #next(iterator: AsyncIterator<StartResponse>, stall: { stalled: boolean }): Promise<StreamEvent | undefined> {
    const timer = setTimeout(() => {
      stall.stalled = true;
      this.#abort.abort(new Error(`no event and no keepalive for ${this.#settings.stallMs} ms`));
    }, this.#settings.stallMs);
    try {
      const result = await iterator.next();
      return result.done ? undefined : result.value.event?.event;
    } finally {
      clearTimeout(timer);
    }
  }

  async #pump(iterator: AsyncIterator<StartResponse>): Promise<void> {
    const stall = { stalled: false };
    try {
      for (;;) {
        if (this.#paused) await new Promise<void>((resolve) => (this.#resumed = resolve));
        if (this.#closed) return;
        const event = await this.#next(iterator, stall);
        if (this.#closed) return;
        if (event === undefined) throw new Error('the event stream ended without an end event');
        if (event.case === 'start') {
          this.#pid = event.value.pid;
        } else if (event.case === 'data') {
          const output = event.value.output;
          if (output.case === 'stdout' || output.case === 'stderr') this.#sink.output(output.case, output.value);
          // A terminal's bytes, its standard error's among them: one stream (SS-PTY-2).
          else if (output.case === 'pty') this.#sink.output('stdout', output.value);
        } else if (event.case === 'end') {
          this.#end({ kind: 'exit', status: exitStatusOf(event.value) });
          return;
        }
      }
    } catch (error) {
      if (this.#closed) return;
      const cause = stall.stalled ? new Error(`no event and no keepalive for ${this.#settings.stallMs} ms`) : error;
      this.#end(this.#failure(cause));
    }
  }

  /** A failed stream: envd's refusal of the start, or a link whose effect is unknown. */
  #failure(error: unknown): TransportEnd {
    if (this.#pid === undefined && isDaemonAnswer(error)) {
      if (error.code === Code.InvalidArgument) return { kind: 'refused', reason: error.rawMessage, error };
      if (this.#user !== undefined && error.code === Code.Unauthenticated && /invalid username/.test(error.rawMessage)) {
        return { kind: 'refused', reason: `no such account ${JSON.stringify(this.#user)} in the sandbox`, error };
      }
    }
    return { kind: 'broken', error, sent: this.#pid !== undefined || !neverSent(error) };
  }

  #end(end: TransportEnd): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    this.#sink.end(end);
  }

  async signal(signal: string): Promise<void> {
    if (signal !== 'SIGTERM' || this.#pid === undefined) throw new Error(`envd cannot deliver ${signal}`);
    try {
      await this.#settings.client.sendSignal(
        { process: { selector: { case: 'pid', value: this.#pid } }, signal: EnvdSignal.SIGTERM },
        { timeoutMs: this.#settings.requestTimeoutMs, headers: this.#auth },
      );
    } catch (error) {
      // Gone already: envd no longer knows the pid.
      if (isDaemonAnswer(error) && error.code === Code.NotFound) return;
      throw error;
    }
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    const pid = this.#pid!;
    for (let offset = 0; offset < data.byteLength || offset === 0; offset += STDIN_CHUNK) {
      const part = data.subarray(offset, offset + STDIN_CHUNK);
      try {
        await this.#settings.client.sendInput(
          { process: { selector: { case: 'pid', value: pid } }, input: { input: { case: this.#pty === undefined ? 'stdin' : 'pty', value: part } } },
          { headers: this.#auth },
        );
      } catch (error) {
        // envd answers NotFound once the process is gone and Internal when the pipe is closed or
        // nothing reads it: nothing of this request was delivered. Anything else leaves delivery
        // uncertain, and a write is never sent twice.
        if (isDaemonAnswer(error) && (error.code === Code.NotFound || error.code === Code.Internal)) {
          throw new StdinClosed(`standard input is closed: ${error.rawMessage}`, { cause: error });
        }
        throw new TransportError(`the delivery of ${data.byteLength} bytes of standard input is uncertain: ${describeEnvdError(error)}`, { cause: error });
      }
      if (data.byteLength === 0) break;
    }
  }

  async closeStdin(): Promise<void> {
    // A terminal's input is never closed (the runtime types 0x04): envd has no pipe to close.
    if (this.#pty !== undefined) return;
    try {
      await this.#settings.client.closeStdin({ process: { selector: { case: 'pid', value: this.#pid! } } }, { headers: this.#auth });
    } catch (error) {
      // Gone or already closed: closed either way.
      if (isDaemonAnswer(error)) return;
      throw new TransportError(`could not close standard input of process ${this.#pid}: ${describeEnvdError(error)}`, { cause: error });
    }
  }

  /** Spec 1.5: `Update` with the terminal's new size (TIOCSWINSZ: SIGWINCH to its foreground group), bounded by the request timeout. */
  async resize(cols: number, rows: number): Promise<void> {
    if (this.#pty === undefined) throw new TypeError('resize() of a process without a terminal');
    if (this.#pid === undefined || this.#closed) throw new StdinClosed('the process has ended; its terminal is gone');
    try {
      await this.#settings.client.update(
        { process: { selector: { case: 'pid', value: this.#pid } }, pty: { size: { cols, rows } } },
        { timeoutMs: this.#settings.requestTimeoutMs, headers: this.#auth },
      );
    } catch (error) {
      if (isDaemonAnswer(error) && error.code === Code.NotFound) throw new StdinClosed('the process has ended; its terminal is gone', { cause: error });
      throw new TransportError(`the resize of the terminal is unconfirmed: ${describeEnvdError(error)}`, { cause: error });
    }
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    const resumed = this.#resumed;
    this.#resumed = undefined;
    resumed?.();
  }

  close(): void {
    this.#closed = true;
    this.#abort.abort();
    this.resume();
  }
}
