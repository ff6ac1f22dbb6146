/**
 * SSH as a `RemoteTransport` of `@sandstream/remote`: one exec channel per
 * process, its standard output and error read as bytes, standard input
 * written to the channel and ended with the channel's end-of-file, the exit
 * from the channel's `exit-status` or `exit-signal`.
 *
 * sshd's own `signal` request is not used: it signals the whole session's
 * process group (the supervisor's helpers too) and is refused for root. So
 * the transport offers no signals, and the driver's helpers, channels of
 * their own, signal the tree. The start string is `start-line.ts`'s.
 */
import type { ClientChannel } from 'ssh2';
import { StdinClosed, TransportError } from '@sandstream/types';
import type { ExitStatus } from '@sandstream/types/runtime';
import { type HelperOptions, type HelperResult, type RemoteTransport, type StartRequest, stdinHeld, type TransportEnd, type TransportProcess, type TransportSink, untilWritten } from '@sandstream/remote';
import type { OpenChannel, SshConnections } from './connections.js';
import { SshConnectionLost } from './errors.js';
import { PreludeFilter, startLine, STORED_MARK } from './start-line.js';

/**
 * Input written since the last probe after which the probe runs again. sshd takes every byte for a
 * command that closed its standard input and drops it (OpenSSH's channel discards data once its
 * write side failed), so a write never stalls there: only the sandbox can tell.
 */
const PROBE_EVERY_BYTES = 1024 * 1024;

/** What the transport of one sandbox handle needs. */
export interface SshTransportSettings {
  readonly connections: SshConnections;
  /** Bound on a helper, in ms. */
  readonly requestTimeoutMs: number;
  /** The server's POSIX shell, for the standard input probe. */
  readonly shell: string;
}

/** Exec channels on one sandbox handle's connections. */
export class SshTransport implements RemoteTransport {
  readonly settings: SshTransportSettings;

  constructor(settings: SshTransportSettings) {
    this.settings = settings;
  }

  start(request: StartRequest, sink: TransportSink): TransportProcess {
    return new ChannelProcess(this, request, sink);
  }

  /**
   * A helper as a channel of its own, its output read and dropped. Rejects once its bound passed
   * or its connection dropped. Its input is `/dev/null`, so its exit status is never dropped (see
   * `StartWords.stdin`); a channel that still closes without one, on a live connection, is
   * reported as exit code null.
   */
  async run(argv: readonly string[], options: HelperOptions): Promise<HelperResult> {
    const { command } = startLine({ argv, env: {}, cwd: undefined, stdin: false }, 'helper');
    const { channel, down, status } = await this.settings.connections.exec(command);
    return new Promise<HelperResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        channel.close();
        reject(new TransportError(`a helper on ${this.settings.connections.address} did not end within ${options.timeoutMs} ms`));
      }, options.timeoutMs);
      channel.on('data', () => undefined);
      channel.stderr.on('data', () => undefined);
      channel.once('close', () => {
        clearTimeout(timer);
        // The connection's own close comes just after its channels': asked once that has run.
        setImmediate(() => {
          const exit = status();
          if (exit === undefined && down()) reject(new SshConnectionLost(this.settings.connections.address));
          else resolve({ exitCode: exit?.exitCode ?? null });
        });
      });
    });
  }
}

/** One exec channel. */
class ChannelProcess implements TransportProcess {
  readonly #transport: SshTransport;
  readonly #sink: TransportSink;
  readonly #request: StartRequest;
  readonly #opened: Promise<OpenChannel | undefined>;
  readonly #stdout = new PreludeFilter();
  readonly #stderr = new PreludeFilter();
  /** Stops listening for the connection's drop (`OpenChannel.onDrop`). */
  #leave: () => void = () => undefined;
  /** The channel's exit as reported (`OpenChannel.status`), once open. */
  #exit: () => ExitStatus | undefined = () => undefined;
  #ended = false;
  #closed = false;
  #stdinClosed = false;
  /** The probe found nothing of the command holding its standard input: every write fails from now on. */
  #readerGone = false;
  #sinceProbe = 0;
  /** The probe by volume now running (`#probeByVolume`). */
  #probe: Promise<boolean> | undefined;

  constructor(transport: SshTransport, request: StartRequest, sink: TransportSink) {
    this.#transport = transport;
    this.#request = request;
    this.#sink = sink;
    this.#opened = this.#open();
  }

  async #open(): Promise<OpenChannel | undefined> {
    const { command, staged } = startLine(this.#request, this.#request.id);
    const { connections } = this.#transport.settings;
    let opened: OpenChannel;
    try {
      // A start too large for an exec request goes first into a file, through a channel's input.
      if (staged !== undefined) await this.#upload(staged.upload, staged.script);
      opened = await connections.exec(command);
    } catch (error) {
      // A channel never opened runs nothing; one whose connection dropped under the request may have.
      this.#end({ kind: 'broken', error, sent: error instanceof SshConnectionLost && staged === undefined });
      return undefined;
    }
    if (this.#closed) {
      opened.channel.close();
      return undefined;
    }
    this.#read(opened);
    return opened;
  }

  /** Runs `command` with `script` as its standard input; rejects unless it wrote {@link STORED_MARK}. */
  async #upload(command: string, script: Uint8Array): Promise<void> {
    const { channel } = await this.#transport.settings.connections.exec(command);
    const said = await new Promise<string>((resolve) => {
      let said = '';
      channel.on('data', (chunk: Buffer) => (said += chunk.toString('latin1')));
      channel.stderr.on('data', (chunk: Buffer) => (said += chunk.toString('latin1')));
      channel.once('close', () => resolve(said));
      channel.end(script);
    });
    if (!said.endsWith(STORED_MARK)) throw new TransportError(`the server did not store the start: ${said.trim().slice(0, 500) || 'no answer'}`);
  }

  #read({ channel, onDrop, down, status }: OpenChannel): void {
    this.#exit = status;
    const streams = [channel, channel.stderr] as const;
    let open: number = streams.length;
    let closed = false;
    let lost: Error | undefined;
    const finish = (): void => {
      if ((open === 0 || lost !== undefined) && closed) {
        this.#leave();
        // The connection's own close comes just after its channels': the end is decided once that has run.
        setImmediate(() => this.#finish(lost ?? (down() ? new SshConnectionLost(this.#transport.settings.connections.address) : undefined)));
      }
    };
    channel.on('data', (chunk: Buffer) => this.#output('stdout', this.#stdout.push(chunk)));
    channel.stderr.on('data', (chunk: Buffer) => this.#output('stderr', this.#stderr.push(chunk)));
    for (const stream of streams) {
      stream.once('end', () => {
        open -= 1;
        finish();
      });
    }
    channel.once('close', () => {
      closed = true;
      finish();
    });
    this.#leave = onDrop((error) => {
      lost = error;
      closed = true;
      finish();
    });
  }

  #output(stream: 'stdout' | 'stderr', data: Buffer | undefined): void {
    if (data !== undefined && !this.#ended) this.#sink.output(stream, data);
  }

  #finish(lost: Error | undefined): void {
    const status = this.#exit();
    if (this.#stderr.refused) {
      this.#end({ kind: 'refused', reason: `the working directory ${JSON.stringify(this.#request.cwd)} does not exist or cannot be entered on the server` });
    } else if (!this.#stderr.through && status !== undefined) {
      // The account's shell never ran the start string: no shell, a `nologin` account, a forced command.
      const said = [this.#stderr.noise, this.#stdout.noise].filter((text) => text !== '').join('; ');
      this.#end({ kind: 'refused', reason: `the server's shell did not run the command (exit ${status.exitCode ?? status.signal})${said === '' ? '' : `: ${said}`}` });
    } else if (lost !== undefined && status === undefined) {
      this.#end({ kind: 'broken', error: lost, sent: true });
    } else {
      // Without a status on a live connection: OpenSSH closed the channel as its output and input
      // both ended, before it reaped the process (a command whose input the driver closed). Its
      // end is the supervisor's reports', which the driver has read.
      this.#end({ kind: 'exit', status });
    }
  }

  #end(end: TransportEnd): void {
    if (this.#ended || this.#closed) return;
    this.#ended = true;
    this.#sink.end(end);
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    const opened = await this.#opened;
    const channel = opened?.channel;
    if (channel === undefined || this.#ended || this.#stdinClosed || !this.#request.stdin || !channel.writable) throw new StdinClosed('standard input is closed');
    if (this.#readerGone) throw new StdinClosed('standard input is closed: nothing of the command holds it open');
    const written = new Promise<void>((resolve, reject) => {
      channel.write(data, (error) => {
        if (error === undefined || error === null) resolve();
        else if (this.#ended || this.#closed) reject(new StdinClosed('standard input is closed: the command ended', { cause: error }));
        // Part of it may have reached the server: never sent again.
        else reject(new TransportError(`the delivery of ${data.byteLength} bytes of standard input is uncertain: ${error.message}`, { cause: error }));
      });
    });
    written.catch(() => undefined);
    await this.#probeByVolume(data.byteLength);
    // The server takes bytes up as long as its window lasts; a write it holds back is a slow reader
    // or a closed pipe, which only the server can tell (the remote kit's stdin probe).
    await untilWritten(written, () => this.#ended || this.#closed, () => this.#readerHolds());
  }

  /**
   * The probe by volume: one after each {@link PROBE_EVERY_BYTES} written, in the background; a
   * writer that gets another as far ahead of a probe still running waits for its answer, so that
   * what a command that closed its input is sent stays bounded however slow the probe is.
   */
  async #probeByVolume(bytes: number): Promise<void> {
    this.#sinceProbe += bytes;
    if (this.#sinceProbe < PROBE_EVERY_BYTES) return;
    if (this.#probe === undefined) {
      this.#sinceProbe = 0;
      const probe = this.#readerHolds().finally(() => {
        if (this.#probe === probe) this.#probe = undefined;
      });
      this.#probe = probe;
      return;
    }
    if (!(await this.#probe)) throw new StdinClosed('standard input is closed: nothing of the command holds it open');
  }

  /** Whether the command still holds its standard input: false from the first probe that found it closed. */
  async #readerHolds(): Promise<boolean> {
    if (!this.#readerGone && !(await this.#stdinHeld())) this.#readerGone = true;
    return !this.#readerGone;
  }

  /** Whether a process of the command still holds its standard input (true also when that cannot be learned now). */
  #stdinHeld(): Promise<boolean> {
    const { shell, requestTimeoutMs } = this.#transport.settings;
    return stdinHeld(this.#transport, shell, this.#request.id, undefined, requestTimeoutMs);
  }

  async closeStdin(): Promise<void> {
    this.#stdinClosed = true;
    const channel = (await this.#opened)?.channel;
    if (channel === undefined || !this.#request.stdin || !channel.writable) return;
    // The channel's end-of-file: sshd closes the command's standard input; output still comes back.
    channel.end();
  }

  pause(): void {
    void this.#opened.then((opened) => this.#each(opened?.channel, (stream) => stream.pause()));
  }

  resume(): void {
    void this.#opened.then((opened) => this.#each(opened?.channel, (stream) => stream.resume()));
  }

  #each(channel: ClientChannel | undefined, act: (stream: NodeJS.ReadableStream) => void): void {
    if (channel === undefined) return;
    act(channel);
    act(channel.stderr);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    void this.#opened.then((opened) => {
      this.#leave();
      opened?.channel.close();
    });
  }
}
