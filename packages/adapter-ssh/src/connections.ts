/**
 * The SSH connections of one sandbox handle: opened on demand, each carrying
 * up to `channelsPerConnection` channels (OpenSSH refuses more than its
 * `MaxSessions`, 10 by default), and replaced once one drops. A dropped
 * connection fails only its own channels; the next start or helper opens a
 * new one, so kills after a broken link reach the server again.
 */
import { Client, type ClientChannel, type ConnectConfig } from 'ssh2';
import { TransportError } from '@sandstream/types';
import type { ExitStatus } from '@sandstream/types/runtime';
import { SshAuthFailed, SshConnectionLost, SshUnreachable } from './errors.js';
import { hostVerifier } from './host-keys.js';
import type { ResolvedSshOptions } from './options.js';

/** One connection and how many channels it carries now. */
interface Link {
  readonly client: Client;
  /**
   * The sessions sshd holds for this connection, as far as can be known: one per channel from its
   * open until it closed after its exit status. sshd keeps a session until its process exits, so
   * a channel this side closed before its exit keeps its slot for the connection's life.
   */
  held: number;
  /** Channels not yet closed. */
  open: number;
  /** The server refused a channel: no new one goes on it until one of its sessions is known to be freed. */
  full: boolean;
  /** Dropped, ended, or given up: no new channel goes on it. */
  down: boolean;
  /** The timer that ends the connection after {@link IDLE_MS} without a channel, beside another. */
  idle: NodeJS.Timeout | undefined;
  /** Told once the connection closed, for whatever reason; each channel's listener leaves with its channel. */
  readonly onClose: Set<(error: Error) => void>;
}

/** An exec channel and the connection it runs on. */
export interface OpenChannel {
  readonly channel: ClientChannel;
  /**
   * The exit the server reported, once it did. Listened for as the channel opens: ssh2 may read the
   * opening, the output, the exit and the close of a short command from one packet, and emits
   * `exit` in that same turn, before any listener added after the open would be there.
   */
  readonly status: () => ExitStatus | undefined;
  /** Whether the channel's connection is down (dropped, or failed). */
  readonly down: () => boolean;
  /**
   * Calls `listener` once the connection under the channel drops; returns what removes it. (Not a
   * promise of the connection's: a long-lived connection would keep every channel's reaction.)
   */
  readonly onDrop: (listener: (error: Error) => void) => () => void;
}

/** The exit an SSH server reports: `exit-status`, or `exit-signal` with the signal's name (ssh2 prefixes `SIG`). */
export function channelStatus(code: number | null | undefined, signal: string | undefined): ExitStatus | undefined {
  if (typeof code === 'number') return { exitCode: code, signal: null };
  if (typeof signal === 'string' && signal !== '') return { exitCode: null, signal: signal.startsWith('SIG') ? signal : `SIG${signal}` };
  return undefined;
}

/** How long a connection stays without a channel before it ends, when another is open, in ms. */
const IDLE_MS = 1_000;

/** The server would not open a channel (sshd: "open failed", its `MaxSessions` reached). */
class ChannelRefused extends TransportError {
  constructor(address: string, cause: Error) {
    super(`the SSH server at ${address} refused a channel: ${cause.message}`, { cause });
  }
}

/** `host:port`, for messages. */
export function addressOf(options: ResolvedSshOptions): string {
  return options.host.includes(':') ? `[${options.host}]:${options.port}` : `${options.host}:${options.port}`;
}

/** The pool of one sandbox handle. */
export class SshConnections {
  readonly options: ResolvedSshOptions;
  readonly address: string;
  readonly #links = new Set<Link>();
  /** Connections being opened, which channels wait for rather than opening more. */
  readonly #opening = new Set<Promise<Link>>();
  #closed = false;

  constructor(options: ResolvedSshOptions) {
    this.options = options;
    this.address = addressOf(options);
  }

  /** Opens one connection: TCP, the host key, authentication. Rejects with the adapter's typed error. */
  async #connect(): Promise<Link> {
    const { options } = this;
    const verifier = hostVerifier({
      host: options.host,
      port: options.port,
      ...(options.knownHostsPath === undefined ? {} : { knownHostsPath: options.knownHostsPath }),
      ...(options.hostFingerprint === undefined ? {} : { hostFingerprint: options.hostFingerprint }),
    });
    const client = new Client();
    const config: ConnectConfig = {
      host: options.host,
      port: options.port,
      username: options.username,
      readyTimeout: options.connectTimeoutMs,
      keepaliveInterval: options.keepaliveMs,
      keepaliveCountMax: 3,
      hostVerifier: (key: Buffer) => verifier.verify(key),
      ...(options.privateKey === undefined ? {} : { privateKey: options.privateKey }),
      ...(options.passphrase === undefined ? {} : { passphrase: options.passphrase }),
      ...(options.agent === undefined ? {} : { agent: options.agent }),
    };
    const link: Link = { client, held: 0, open: 0, full: false, down: false, idle: undefined, onClose: new Set() };
    client.once('close', () => {
      const error = new SshConnectionLost(this.address);
      for (const listener of link.onClose) listener(error);
      link.onClose.clear();
    });
    await new Promise<void>((resolve, reject) => {
      const fail = (error: Error & { level?: string }): void => {
        client.end();
        const refused = verifier.error();
        if (refused !== undefined) reject(refused);
        else if (error.level === 'client-authentication') reject(new SshAuthFailed(this.address, options.username, [options.privateKey === undefined ? undefined : 'publickey', options.agent === undefined ? undefined : 'agent'].filter(Boolean).join(','), { cause: error }));
        else reject(new SshUnreachable(this.address, error.message, { cause: error }));
      };
      client.once('ready', () => {
        client.off('error', fail);
        // Without it, a channel opened just after another closed waits on a delayed ACK (about 40 ms).
        client.setNoDelay(true);
        resolve();
      });
      client.once('error', fail);
      client.connect(config);
    });
    // Later errors (a reset, keepalives unanswered) drop the link; 'close' always follows.
    client.on('error', () => (link.down = true));
    client.once('close', () => {
      link.down = true;
      clearTimeout(link.idle);
      this.#links.delete(link);
    });
    return link;
  }

  /**
   * A connection with a channel slot taken for the caller (the check and the count in one step,
   * so that callers at once never share the last slot); one being opened is waited for before
   * another is opened.
   */
  async #acquire(): Promise<Link> {
    for (;;) {
      if (this.#closed) throw new TransportError('the sandbox is closed: its SSH connections are gone');
      for (const link of this.#links) {
        if (!link.down && !link.full && link.held < this.options.channelsPerConnection) return this.#take(link);
      }
      if (this.#opening.size === 0) return this.#take(await this.#open());
      await Promise.allSettled([...this.#opening]);
    }
  }

  #take(link: Link): Link {
    link.held += 1;
    link.open += 1;
    clearTimeout(link.idle);
    link.idle = undefined;
    return link;
  }

  /** A channel of `link` closed: its session is known to be freed when its exit status came first. */
  #closedChannel(link: Link, exited: boolean): void {
    link.open -= 1;
    if (exited) {
      link.held -= 1;
      link.full = false;
    }
    if (link.open > 0 || link.down) return;
    // Idle and holding only sessions given up on: it serves no one.
    if (link.held > 0) {
      this.#end(link);
      return;
    }
    // Idle: a burst's extra connection goes (its socket and keepalive timer with it) once it stayed
    // idle a while beside another; the last one stays for the next command.
    link.idle = setTimeout(() => {
      link.idle = undefined;
      if (link.open === 0 && !link.down && [...this.#links].some((other) => other !== link && !other.down)) this.#end(link);
    }, IDLE_MS);
    link.idle.unref();
  }

  #end(link: Link): void {
    clearTimeout(link.idle);
    link.idle = undefined;
    link.down = true;
    link.client.end();
  }

  /** Opens a connection and adds it to the pool (before any waiter looks again). */
  async #open(): Promise<Link> {
    const opening = (async () => {
      const link = await this.#connect();
      if (this.#closed) {
        link.client.end();
        throw new TransportError('the sandbox is closed: its SSH connections are gone');
      }
      this.#links.add(link);
      return link;
    })();
    this.#opening.add(opening);
    try {
      return await opening;
    } finally {
      this.#opening.delete(opening);
    }
  }

  /** Proves the server reachable and the credentials good: one connection, kept for the first commands. */
  async check(): Promise<void> {
    const link = await this.#acquire();
    link.held -= 1;
    link.open -= 1;
  }

  /**
   * Opens an exec channel for `command`. Rejects with `SshUnreachable`, `SshAuthFailed` or a host
   * key error when no connection could be opened (nothing was sent), with `SshConnectionLost` when
   * the connection dropped under the request, with `TransportError` when even a new connection
   * refused the channel. A connection that refuses one (its `MaxSessions` reached, sessions of
   * channels closed here whose processes still run) takes no more, and the channel is asked of
   * another.
   */
  async exec(command: string): Promise<OpenChannel> {
    for (let attempt = 1; ; attempt++) {
      const link = await this.#acquire();
      const fresh = link.held === 1;
      try {
        let status: ExitStatus | undefined;
        const channel = await new Promise<ClientChannel>((resolve, reject) => {
          const lost = (): void => reject(new SshConnectionLost(this.address));
          link.client.once('close', lost);
          link.client.exec(command, (error, opened) => {
            link.client.off('close', lost);
            if (error !== undefined && error !== null) {
              reject(link.down ? new SshConnectionLost(this.address, { cause: error }) : new ChannelRefused(this.address, error));
              return;
            }
            // In this turn, before anything else can run (see OpenChannel.status).
            opened.once('exit', (code: number | null, signal?: string) => (status = channelStatus(code, signal)));
            opened.once('close', () => this.#closedChannel(link, status !== undefined));
            resolve(opened);
          });
        });
        const onDrop = (listener: (error: Error) => void): (() => void) => {
          link.onClose.add(listener);
          return () => link.onClose.delete(listener);
        };
        return { channel, onDrop, down: () => link.down, status: () => status };
      } catch (error) {
        link.held -= 1;
        link.open -= 1;
        if (!(error instanceof ChannelRefused)) throw error;
        link.full = true;
        // A connection that refuses its first channel would refuse on any connection; so would one
        // asked too often.
        if (fresh || attempt >= 8) throw error;
      }
    }
  }

  /** Destroys every connection's socket as a failed network would (the server learns nothing); returns how many. */
  cut(): number {
    const links = [...this.#links];
    for (const link of links) {
      clearTimeout(link.idle);
      link.down = true;
      link.client.destroy();
    }
    return links.length;
  }

  /** Ends every connection (what runs on the server is the driver's to end first). */
  close(): void {
    this.#closed = true;
    for (const link of this.#links) this.#end(link);
    this.#links.clear();
  }
}
