/**
 * Docker exec as a `RemoteTransport` of `@sandstream/remote`: one exec
 * (create, then start over a hijacked connection) per process, its
 * multiplexed output read as bytes, standard input written to the same
 * connection and closed by half-closing it, the exit from exec inspect.
 * Exec has no signal call (moby/moby#9098), so the transport offers none:
 * the driver's helpers, execs of their own, signal the tree.
 *
 * On a terminal (spec 1.5, `StartRequest.pty`): the exec is created with
 * `Tty` and `ConsoleSize` (`[rows, cols]`, also in the start's body), its
 * stream is the terminal's raw bytes (the Engine does not multiplex under a
 * terminal), all `stdout`; input is written to the same hijacked connection
 * and never half-closed; `resize` is `POST /exec/{id}/resize?h=&w=`.
 */
import type { Socket } from 'node:net';
import type Docker from 'dockerode';
import { StdinClosed, TransportError } from '@sandstream/types';
import { type HelperOptions, type HelperResult, type RemoteTransport, type StartRequest, stdinHeld, type SupervisorReport, type TransportEnd, type TransportProcess, type TransportSink, untilWritten } from '@sandstream/remote';
import { addressOf, describeEngineError, neverSent, noSuchExec, typedError, unanswered, untilAnswered } from './client.js';
import { ContainerGone, DockerRestarted, DockerUnreachable } from './errors.js';
import { FrameSplitter } from './demux.js';
import { execStatus, START_FAILED } from './exit-status.js';

/** What the transport of one sandbox handle needs. */
export interface DockerTransportSettings {
  readonly docker: Docker;
  /** The container's id. */
  readonly container: string;
  /** Bound on one request that is not a command's stream (an inspect, a helper), in ms. */
  readonly requestTimeoutMs: number;
  /** The container's POSIX shell, for the standard input probe. */
  readonly shell: string;
}

/**
 * The detach sequence of a terminal's exec. The Engine cannot turn detaching off: typed on the
 * attach stream, its sequence ends the stream and leaves the exec running (the default, ^P ^Q,
 * is two bytes any program's input may hold). This one is eight bytes that text and a program's
 * escape sequences never hold: 0x1f 0x00 0x1f 0x00 0x1e 0x1d 0x1e 0x1d. (The Engine holds back
 * the bytes of a partial match until the next byte tells it apart.)
 */
const DETACH_KEYS = 'ctrl-_,ctrl-@,ctrl-_,ctrl-@,ctrl-^,ctrl-],ctrl-^,ctrl-]';

/** The Engine's answer that an exec still runs, which {@link DockerTransport.exitOf} asks again. */
const STILL_RUNNING = new Error('the Engine still reports the exec running');

/** Docker exec in one container. */
export class DockerTransport implements RemoteTransport {
  readonly settings: DockerTransportSettings;
  /** Spec 1.5: an exec can be started on a terminal (whether commands may ask is the manifest's `pty`). */
  readonly pty = true;
  readonly #container: Docker.Container;

  constructor(settings: DockerTransportSettings) {
    this.settings = settings;
    this.#container = settings.docker.getContainer(settings.container);
  }

  start(request: StartRequest, sink: TransportSink): TransportProcess {
    return new ExecProcess(this, this.#container, request, sink);
  }

  /** The adapter's typed error for `error`, or `error` itself. */
  typed(error: unknown): unknown {
    return typedError(this.settings.docker, this.settings.container, error) ?? error;
  }

  /** No answer within the request bound, however the link failed (a dockerd going down may accept and stay silent): `DockerUnreachable`. */
  unreachable(error: unknown): unknown {
    const typed = this.typed(error);
    if (typed !== error) return typed;
    return new DockerUnreachable(addressOf(this.settings.docker), `no answer within ${this.settings.requestTimeoutMs} ms: ${describeEngineError(error)}`, { cause: error });
  }

  /** Runs argv as an exec of its own, read to its end: its exit code and the start of what it printed. */
  async #exec(argv: readonly string[], user: string | undefined, timeoutMs: number): Promise<{ exitCode: number | null; said: string }> {
    const abortSignal = AbortSignal.timeout(timeoutMs);
    try {
      const exec = await this.#container.exec({ Cmd: [...argv], AttachStdout: true, AttachStderr: true, ...(user === undefined ? {} : { User: user }), abortSignal });
      const stream = (await exec.start({ hijack: false, abortSignal } as Docker.ExecStartOptions)) as NodeJS.ReadableStream;
      let said = '';
      await new Promise<void>((resolve, reject) => {
        stream.on('error', reject);
        stream.on('end', resolve);
        stream.on('data', (chunk: Buffer) => {
          if (said.length < 4096) said += chunk.toString('latin1');
        });
      });
      const state = await exec.inspect({ abortSignal });
      return { exitCode: state.ExitCode ?? null, said };
    } catch (error) {
      throw this.typed(error);
    }
  }

  /**
   * A helper as an exec of its own. A container that is gone (removed or
   * stopped) runs nothing, and no process runs as an account the container
   * does not have: whatever the helper was to end has ended, which is its
   * success, exit 0.
   */
  async run(argv: readonly string[], options: HelperOptions): Promise<HelperResult> {
    try {
      const { exitCode, said } = await this.#exec(argv, options.user, options.timeoutMs);
      // The close-time sweep as an account whose start was refused.
      if (exitCode === 126 && /unable to find user/.test(said)) return { exitCode: 0 };
      return { exitCode };
    } catch (error) {
      if (error instanceof ContainerGone) return { exitCode: 0 };
      throw error;
    }
  }

  /**
   * Whether the container still runs processes, asked with an exec of the
   * shell's no-op: the Engine may not have seen its container die yet when
   * the processes in it already have.
   */
  async execWorks(): Promise<boolean> {
    try {
      return (await this.#exec([this.settings.shell, '-c', ':'], undefined, this.settings.requestTimeoutMs)).exitCode === 0;
    } catch (error) {
      if (error instanceof ContainerGone) return false;
      // No answer (dockerd restarting): what the Engine says of the container once it answers again.
      if (error instanceof DockerUnreachable || unanswered(error)) return (await this.containerRunning().catch(() => true)) === true;
      return true;
    }
  }

  /**
   * The exec's exit code once the Engine has it: asked again a few times
   * while the Engine still reports the exec running, and while it does not
   * answer (see `untilAnswered`).
   */
  async exitOf(exec: Docker.Exec, onUnanswered?: () => void): Promise<{ exitCode: number | null; running: boolean }> {
    let polls = 0;
    return untilAnswered(this.settings.requestTimeoutMs, async (abortSignal) => {
      const state = await exec.inspect({ abortSignal });
      if (state.Running && polls++ < 5) throw STILL_RUNNING;
      return { exitCode: state.ExitCode ?? null, running: state.Running };
    }, (error) => error === STILL_RUNNING, onUnanswered);
  }

  /** Whether the container still runs (undefined: it is gone); asked again while the Engine does not answer. */
  async containerRunning(): Promise<boolean | undefined> {
    try {
      const state = await untilAnswered(this.settings.requestTimeoutMs, (abortSignal) => this.#container.inspect({ abortSignal }));
      return state.State.Running;
    } catch (error) {
      if (this.typed(error) instanceof ContainerGone) return undefined;
      throw error;
    }
  }
}

/** One exec: create, start hijacked, read frames, inspect at the end. */
class ExecProcess implements TransportProcess {
  readonly #transport: DockerTransport;
  readonly #sink: TransportSink;
  readonly #stdin: boolean;
  readonly #id: string;
  readonly #user: string | undefined;
  /** Spec 1.5: the exec's terminal size, when it runs on one. */
  readonly #pty: { readonly cols: number; readonly rows: number } | undefined;
  /** The exec, once created (for `resize`); undefined when it never was. */
  readonly #exec: Promise<Docker.Exec | undefined>;
  #resolveExec!: (exec: Docker.Exec | undefined) => void;
  /** The probe found nothing of the command holding its standard input: every write fails from now on. */
  #readerGone = false;
  readonly #abort = new AbortController();
  readonly #frames = new FrameSplitter();
  readonly #socket: Promise<Socket | undefined>;
  #ended = false;
  #closed = false;
  #stdinClosed = false;
  /**
   * Standard output held back until the first byte of standard error. The
   * supervisor writes nothing to standard output, and its first report (on
   * standard error) comes before any byte of the command; but a start the
   * runtime refused (no such directory, account or shell) is the Engine's
   * message on standard output. Held back, it is the refusal's reason, not
   * the command's output.
   */
  #withheld: Uint8Array[] | undefined = [];
  /** The supervisor reported the command's end (the driver says so): it was alive after its command, so its end is its own or the driver's. */
  #exitReported = false;

  constructor(transport: DockerTransport, container: Docker.Container, request: StartRequest, sink: TransportSink) {
    this.#transport = transport;
    this.#sink = sink;
    this.#stdin = request.stdin;
    this.#id = request.id;
    this.#user = request.user;
    this.#pty = request.pty;
    // Under a terminal nothing is held back: there is no standard error to wait for.
    if (this.#pty !== undefined) this.#withheld = undefined;
    this.#exec = new Promise((resolve) => (this.#resolveExec = resolve));
    this.#socket = this.#open(container, request);
    void this.#socket.then(() => this.#resolveExec(undefined));
  }

  async #open(container: Docker.Container, request: StartRequest): Promise<Socket | undefined> {
    const signal = this.#abort.signal;
    let exec: Docker.Exec;
    try {
      exec = await container.exec({
        Cmd: [...request.argv],
        Env: Object.entries(request.env).map(([name, value]) => `${name}=${value}`),
        AttachStdin: request.stdin,
        AttachStdout: true,
        AttachStderr: true,
        Tty: this.#pty !== undefined,
        ...(this.#pty === undefined ? {} : { ConsoleSize: [this.#pty.rows, this.#pty.cols], DetachKeys: DETACH_KEYS }),
        ...(request.cwd === undefined ? {} : { WorkingDir: request.cwd }),
        ...(request.user === undefined ? {} : { User: request.user }),
        abortSignal: signal,
      } as Docker.ExecCreateOptions);
    } catch (error) {
      // An exec that was never started runs nothing, whatever the create's fate.
      this.#end(this.#refusal(error) ?? { kind: 'broken', error: this.#transport.typed(error), sent: false });
      return undefined;
    }
    this.#resolveExec(exec);
    let socket: Socket;
    try {
      const terminal = this.#pty === undefined ? {} : { Tty: true, ConsoleSize: [this.#pty.rows, this.#pty.cols] };
      socket = (await exec.start({ hijack: true, stdin: request.stdin, abortSignal: signal, ...terminal } as Docker.ExecStartOptions)) as Socket;
    } catch (error) {
      this.#end(this.#refusal(error) ?? { kind: 'broken', error: this.#transport.typed(error), sent: !neverSent(error) });
      return undefined;
    }
    if (this.#closed) {
      socket.destroy();
      return undefined;
    }
    this.#read(socket, exec);
    return socket;
  }

  /** The Engine's answer that it will not start the exec (the container gone or paused), as a refusal. */
  #refusal(error: unknown): TransportEnd | undefined {
    const typed = this.#transport.typed(error);
    if (typed === error) return undefined;
    if (typed instanceof TransportError && !(typed instanceof DockerUnreachable)) return { kind: 'refused', reason: typed.message, error: typed };
    return undefined;
  }

  #read(socket: Socket, exec: Docker.Exec): void {
    let failure: unknown;
    socket.on('data', (chunk: Buffer) => {
      if (this.#ended) return;
      // A terminal's bytes come raw: one stream, no frames.
      if (this.#pty !== undefined) {
        this.#sink.output('stdout', chunk);
        return;
      }
      try {
        this.#frames.push(chunk, (stream, data) => this.#output(stream, data));
      } catch (error) {
        failure = error;
        socket.destroy();
      }
    });
    socket.on('error', (error) => (failure ??= error));
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      void this.#finish(exec, failure);
    };
    socket.on('end', finish);
    socket.on('close', finish);
  }

  #output(stream: 'stdout' | 'stderr', data: Uint8Array): void {
    if (stream === 'stdout' && this.#withheld !== undefined) {
      this.#withheld.push(Buffer.from(data));
      return;
    }
    if (stream === 'stderr') this.#flush();
    this.#sink.output(stream, data);
  }

  reported(report: SupervisorReport): void {
    if (report.type === 'exit') this.#exitReported = true;
  }

  #flush(): void {
    const withheld = this.#withheld;
    this.#withheld = undefined;
    for (const data of withheld ?? []) this.#sink.output('stdout', data);
  }

  /** The stream ended: the exit from exec inspect, or what broke. */
  async #finish(exec: Docker.Exec, failure: unknown): Promise<void> {
    if (this.#ended || this.#closed) return;
    if (failure === undefined && this.#frames.partial) failure = new Error('the stream ended inside a frame');
    let state;
    let unreachable = false;
    try {
      state = await this.#transport.exitOf(exec, () => (unreachable = true));
    } catch (error) {
      // The exec instance goes with its container, and with the daemon's memory: an Engine that
      // stopped answering and answers again without it was restarted (with live restore, or the
      // container would be stopped). One still silent is `DockerUnreachable`.
      const restarted = unreachable && noSuchExec(error) ? new DockerRestarted(addressOf(this.#transport.settings.docker), { cause: error }) : undefined;
      // An Engine that did not answer within the bound cannot tell what became of the container either.
      const silent = unanswered(error);
      const gone = silent ? undefined : await this.#gone();
      this.#end({ kind: 'broken', error: gone ?? restarted ?? (silent ? this.#transport.unreachable(error) : this.#transport.typed(error)), sent: true });
      return;
    }
    if (failure !== undefined || state.running) {
      // The link failed (or the Engine still runs the exec after the stream ended): the command's
      // fate is unknown, unless its container is gone.
      const gone = await this.#gone();
      this.#end({ kind: 'broken', error: gone ?? failure ?? new Error('the stream ended while the exec still runs'), sent: true });
      return;
    }
    if (this.#withheld !== undefined && state.exitCode !== null && START_FAILED.has(state.exitCode)) {
      const said = Buffer.concat(this.#withheld).toString('utf8').trim();
      this.#end({ kind: 'refused', reason: said === '' ? `the Engine could not start the exec (exit status ${state.exitCode})` : said });
      return;
    }
    this.#flush();
    // A supervisor dead of a signal before it saw its command end: killed by the driver's sweep, or
    // with its container. (One that reported the end died of its command's signal on purpose, or
    // by the driver's sweep; its container ran it after the command, and the report decides.)
    if (state.exitCode !== null && state.exitCode > 128 && !this.#exitReported) {
      const gone = await this.#gone();
      if (gone !== undefined) {
        this.#end({ kind: 'broken', error: gone, sent: true });
        return;
      }
    }
    this.#end({ kind: 'exit', status: execStatus(state.exitCode) });
  }

  /** A `ContainerGone` when the container is removed or stopped, else undefined (also when that cannot be learned). */
  async #gone(): Promise<ContainerGone | undefined> {
    const { container } = this.#transport.settings;
    const state = (running: boolean | undefined): ContainerGone | undefined =>
      running === undefined ? new ContainerGone(container, 'removed') : running ? undefined : new ContainerGone(container, 'stopped');
    let silent = false;
    const known = state(await this.#transport.containerRunning().catch((error: unknown) => ((silent = unanswered(error)), true)));
    if (known !== undefined) return known;
    // An Engine that did not answer within the bound will not answer an exec either.
    if (silent) return undefined;
    // The Engine reports the container running, but an exec in it may already fail: it is dying.
    if (await this.#transport.execWorks()) return undefined;
    return state(await this.#transport.containerRunning().catch(() => false)) ?? new ContainerGone(container, 'stopped');
  }

  #end(end: TransportEnd): void {
    if (this.#ended || this.#closed) return;
    this.#ended = true;
    this.#sink.end(end);
    void this.#socket.then((socket) => socket?.destroy());
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    const socket = await this.#socket;
    if (socket === undefined || this.#ended || this.#stdinClosed || !this.#stdin || socket.destroyed || socket.writableEnded) {
      throw new StdinClosed('standard input is closed');
    }
    if (this.#readerGone) throw new StdinClosed('standard input is closed: nothing of the command holds it open');
    const written = new Promise<void>((resolve, reject) => {
      socket.write(data, (error) => {
        if (error === undefined || error === null) resolve();
        else if (this.#ended || this.#closed) reject(new StdinClosed('standard input is closed: the command ended', { cause: error }));
        // Part of it may have reached the Engine: never sent again.
        else reject(new TransportError(`the delivery of ${data.byteLength} bytes of standard input is uncertain: ${describeEngineError(error)}`, { cause: error }));
      });
    });
    written.catch(() => undefined);
    // A terminal's input is taken up by the line discipline, not by the command: a full input
    // queue is a command that reads no more, and the terminal stays open while it runs.
    if (this.#pty !== undefined) return written;
    // The Engine takes bytes up as long as the command's pipe does; a write it holds back is either
    // a slow reader or a closed pipe, which only the container can tell (the remote kit's stdin probe).
    return untilWritten(written, () => this.#ended || this.#closed, () => this.#readerHolds());
  }

  /** Whether the command still holds its standard input: false from the first probe that found it closed. */
  async #readerHolds(): Promise<boolean> {
    const { shell, requestTimeoutMs } = this.#transport.settings;
    if (!this.#readerGone && !(await stdinHeld(this.#transport, shell, this.#id, this.#user, requestTimeoutMs))) this.#readerGone = true;
    return !this.#readerGone;
  }

  async closeStdin(): Promise<void> {
    // A terminal's input is its output's connection too: never half-closed (the runtime types 0x04).
    if (this.#pty !== undefined) return;
    this.#stdinClosed = true;
    const socket = await this.#socket;
    if (socket === undefined || !this.#stdin || this.#readerGone || socket.destroyed || socket.writableEnded) return;
    // A half-close: the Engine reads end-of-file and closes the exec's standard input; its output
    // still comes back on the same connection. Not waited for: with bytes held back by a command
    // that reads no more, the end would wait behind them.
    socket.end();
  }

  /** Spec 1.5: `POST /exec/{id}/resize?h=&w=`, bounded by the request timeout. */
  async resize(cols: number, rows: number): Promise<void> {
    const exec = await this.#exec;
    if (this.#pty === undefined) throw new TypeError('resize() of an exec without a terminal');
    if (exec === undefined || this.#ended || this.#closed) throw new StdinClosed('the exec has ended; its terminal is gone');
    try {
      await exec.resize({ h: rows, w: cols, abortSignal: AbortSignal.timeout(this.#transport.settings.requestTimeoutMs) });
    } catch (error) {
      if (this.#ended || this.#closed || noSuchExec(error) || (error as { statusCode?: number }).statusCode === 409) throw new StdinClosed('the exec has ended; its terminal is gone', { cause: error });
      const typed = this.#transport.typed(error);
      throw typed instanceof TransportError ? typed : new TransportError(`the resize of the terminal is unconfirmed: ${describeEngineError(error)}`, { cause: error });
    }
  }

  pause(): void {
    void this.#socket.then((socket) => socket?.pause());
  }

  resume(): void {
    void this.#socket.then((socket) => socket?.resume());
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    void this.#socket.then((socket) => socket?.destroy());
  }
}
