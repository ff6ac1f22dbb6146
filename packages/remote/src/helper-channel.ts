/**
 * Helpers through one long-lived process per account (ADR-0033, "Helpers
 * through a channel"). On a backend where every helper is a new process
 * start (Docker: an exec, three Engine requests and a `runc exec`), each
 * signal and each kill costs as much as a command's own start, and on a
 * starved backend those starts queue behind every command's. The channel is
 * one process started like a command, but neither supervised nor tagged (a
 * sweep must not end it): a shell that reads one helper's words per line on
 * its standard input, runs the helper, and answers `<n> <status>` on its
 * standard output. A helper then costs a write on an open connection.
 *
 * Where the channel cannot serve (it would not start, it ended, a word does
 * not fit on a line), the helper runs as before, through
 * {@link RemoteTransport.run}. A request the channel did not answer in time
 * rejects, and the channel is given up: the driver's retry of that helper
 * goes the ordinary way.
 */
import { randomUUID } from 'node:crypto';
import { CHANNEL_SH } from './generated/programs.js';
import { HELPER, HELPER_NAME } from './helpers.js';
import type { HelperOptions, HelperResult, RemoteTransport, TransportEnd, TransportProcess } from './transport.js';

/** The channel's name in its own argv (`$0`), so it can be told in a process list. */
export const CHANNEL_NAME = 'sandstream-helper-channel';

/**
 * The channel: `sh -c CHANNEL sandstream-helper-channel`. Each helper runs in
 * a subshell of its own, its output nowhere; its status goes back with the
 * request's number. One line on standard error first: a backend may hold a
 * process's standard output back until its standard error has spoken (Docker
 * does, to tell a refused start's message from the command's output).
 * The program is `src/sh/channel.sh`, with {@link HELPER} in it, embedded
 * without its comments.
 */
export const CHANNEL: string = CHANNEL_SH;

/** What a transport without signals delivers: none. */
const NO_SIGNALS: ReadonlySet<string> = new Set();

/** A word the channel's line can carry: no blank, no newline, nothing a shell's field splitting would change. */
const WORD = /^[A-Za-z0-9_.:-]+$/;

/** The words after `sh -c HELPER sandstream-helper`, when `argv` is a helper the channel can carry. */
function channelWords(argv: readonly string[]): string[] | undefined {
  if (argv[1] !== '-c' || argv[2] !== HELPER || argv[3] !== HELPER_NAME) return undefined;
  const words = argv.slice(4);
  return words.length >= 1 && words.length <= 5 && words.every((word) => WORD.test(word)) ? words : undefined;
}

interface Pending {
  readonly resolve: (result: HelperResult) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/** One account's channel. */
class Channel {
  /** Undefined only while the backend's `start()` runs, which may end the channel before it returns. */
  readonly #process: TransportProcess | undefined;
  readonly #pending = new Map<number, Pending>();
  #next = 0;
  #line = '';
  #ended = false;

  constructor(transport: RemoteTransport, shell: string, user: string | undefined, prefix: string) {
    const decoder = new TextDecoder();
    this.#process = transport.start(
      { argv: [shell, '-c', CHANNEL, CHANNEL_NAME], env: {}, cwd: undefined, user, stdin: true, id: `${prefix}-channel-${randomUUID().slice(0, 8)}` },
      {
        output: (stream, data) => {
          if (stream === 'stdout') this.#answers(decoder.decode(data, { stream: true }));
        },
        end: (end) => this.#end(end),
      },
    );
    if (this.#ended) this.#process.close();
  }

  get usable(): boolean {
    return !this.#ended;
  }

  /** Runs one helper; rejects when the channel ended or did not answer within `timeoutMs`. */
  run(words: readonly string[], timeoutMs: number): Promise<HelperResult> {
    const n = this.#next++;
    return new Promise<HelperResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(n);
        reject(new Error(`the helper channel did not answer within ${timeoutMs} ms`));
        // A channel that stalls serves no one: the helpers to come go the ordinary way.
        this.close();
      }, timeoutMs);
      this.#pending.set(n, { resolve, reject, timer });
      this.#process!.writeStdin(new TextEncoder().encode(`${n} ${words.join(' ')}\n`)).catch((error: unknown) => {
        this.#settle(n, undefined, new Error(`the helper channel took no request: ${error instanceof Error ? error.message : String(error)}`));
        this.close();
      });
    });
  }

  /** Ends the channel: end-of-file on its input ends its loop. Never throws. */
  close(): void {
    if (this.#ended) return;
    this.#ended = true;
    const started = this.#process!;
    started
      .closeStdin()
      .catch(() => undefined)
      .finally(() => started.close());
    this.#failAll(new Error('the helper channel was closed'));
  }

  #answers(text: string): void {
    this.#line += text;
    for (let at = this.#line.indexOf('\n'); at >= 0; at = this.#line.indexOf('\n')) {
      const [n, status] = this.#line.slice(0, at).split(' ');
      this.#line = this.#line.slice(at + 1);
      this.#settle(Number(n), { exitCode: Number(status) }, undefined);
    }
  }

  #settle(n: number, result: HelperResult | undefined, error: Error | undefined): void {
    const pending = this.#pending.get(n);
    if (pending === undefined) return;
    this.#pending.delete(n);
    clearTimeout(pending.timer);
    if (result !== undefined) pending.resolve(result);
    else pending.reject(error!);
  }

  #end(end: TransportEnd): void {
    this.#ended = true;
    this.#process?.close();
    this.#failAll(new Error(`the helper channel ended (${end.kind})`));
  }

  #failAll(error: Error): void {
    for (const n of [...this.#pending.keys()]) this.#settle(n, undefined, error);
  }
}

/**
 * The transport the drivers of one handle see when helpers go through
 * channels: starts and signals are the backend's own; a helper the channel
 * can carry goes through the channel of its account, opened on first use.
 */
export class ChannelledTransport implements RemoteTransport {
  readonly #transport: RemoteTransport;
  readonly #shell: string;
  readonly #prefix: string;
  readonly #channels = new Map<string | undefined, Channel>();
  #closed = false;

  constructor(transport: RemoteTransport, shell: string, prefix: string) {
    this.#transport = transport;
    this.#shell = shell;
    this.#prefix = prefix;
  }

  get signals(): ReadonlySet<string> {
    return this.#transport.signals ?? NO_SIGNALS;
  }

  get pty(): boolean {
    return this.#transport.pty === true;
  }

  start(...args: Parameters<RemoteTransport['start']>): TransportProcess {
    return this.#transport.start(...args);
  }

  run(argv: readonly string[], options: HelperOptions): Promise<HelperResult> {
    const words = channelWords(argv);
    if (words === undefined || this.#closed) return this.#transport.run(argv, options);
    let channel = this.#channels.get(options.user);
    if (channel === undefined) {
      channel = new Channel(this.#transport, this.#shell, options.user, this.#prefix);
      this.#channels.set(options.user, channel);
    }
    // Ended already (a backend may refuse the start at once, before it returned): no request
    // would be answered, so none waits out its bound there.
    if (!channel.usable) return this.#transport.run(argv, options);
    return channel.run(words, options.timeoutMs);
  }

  /** Ends every channel; later helpers go the ordinary way. */
  close(): void {
    this.#closed = true;
    for (const channel of this.#channels.values()) channel.close();
  }
}
