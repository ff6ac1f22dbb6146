/**
 * The adapter's options and their checks: all of them before any
 * connection, so a malformed option never costs a round trip, and a key file
 * that cannot be read is named at once.
 */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { InvalidArgument } from '@sandstream/types';
import { nonNegativeOption } from '@sandstream/types/runtime';
import { REMOTE_OPTION_KEYS, type RemoteSandboxOptions } from '@sandstream/remote';

/**
 * How to reach the machine and prove who we are. Authentication tries what is
 * given: a key (`privateKey` or `privateKeyPath`), then the agent (`agent`, by
 * default `SSH_AUTH_SOCK` when no key is given). The server's host key is always
 * verified: against `hostFingerprint` when given, else against `knownHostsPath`.
 */
export interface SshSandboxOptions extends Omit<RemoteSandboxOptions, 'user'> {
  /** The server's name or address. */
  readonly host: string;
  /** Its port (default 22). */
  readonly port?: number;
  /** The account to log in as (default: this process's user name). Every command runs as it. */
  readonly username?: string;
  /** A private key, in memory (OpenSSH, PEM or PuTTY format). */
  readonly privateKey?: string | Buffer;
  /** A private key file, read once when the sandbox is created. */
  readonly privateKeyPath?: string;
  /** The key's passphrase, for an encrypted key. */
  readonly passphrase?: string;
  /** An SSH agent's socket (default: `SSH_AUTH_SOCK` when no key is given). */
  readonly agent?: string;
  /** The known_hosts file the host key is checked against (default `~/.ssh/known_hosts`). */
  readonly knownHostsPath?: string;
  /** Pinned host key fingerprints (`SHA256:...`, as `ssh-keygen -lf` prints them); known_hosts is then not read. */
  readonly hostFingerprint?: string | readonly string[];
  /** Bound on opening a connection (TCP, handshake, authentication), in ms (default 20000). */
  readonly connectTimeoutMs?: number;
  /** Interval of keepalive requests that find a dead connection, in ms (default 5000; 0: none). */
  readonly keepaliveMs?: number;
  /**
   * Channels (commands, helpers) one connection carries at once before another connection is
   * opened (default 8: OpenSSH's `MaxSessions` is 10 unless configured).
   */
  readonly channelsPerConnection?: number;
}

/** The options' values, checked, with their defaults. */
export interface ResolvedSshOptions {
  readonly host: string;
  readonly port: number;
  readonly username: string;
  readonly privateKey: string | Buffer | undefined;
  readonly passphrase: string | undefined;
  readonly agent: string | undefined;
  readonly knownHostsPath: string | undefined;
  readonly hostFingerprint: string | readonly string[] | undefined;
  readonly connectTimeoutMs: number;
  readonly keepaliveMs: number;
  readonly channelsPerConnection: number;
}

const SSH_KEYS = [
  'host',
  'port',
  'username',
  'privateKey',
  'privateKeyPath',
  'passphrase',
  'agent',
  'knownHostsPath',
  'hostFingerprint',
  'connectTimeoutMs',
  'keepaliveMs',
  'channelsPerConnection',
];

/** Every option this adapter takes. `user` is not one: an SSH login is one account. */
const KNOWN = new Set<string>([...REMOTE_OPTION_KEYS.filter((key) => key !== 'user'), ...SSH_KEYS]);

function text(name: string, value: unknown, required: boolean): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '') throw new InvalidArgument(name, 'must be a non-empty string');
  return value;
}

function whole(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) throw new InvalidArgument(name, `must be a whole number from ${min} to ${max}`);
  return value;
}

/**
 * Checks `options` and gives their values; reads `privateKeyPath`.
 *
 * @throws InvalidArgument for an unknown key, a malformed value, both key options, or a key file that cannot be read.
 */
export function resolveSshOptions(options: SshSandboxOptions): ResolvedSshOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidArgument('options', 'must be an object with at least `host`');
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new InvalidArgument(key, key === 'user' ? 'is not an option of adapter-ssh: every command runs as the login account (`username`)' : 'is not an option of adapter-ssh');
  }
  const host = text('host', options.host, true)!;
  const username = text('username', options.username, false) ?? userInfo().username;
  if (options.privateKey !== undefined && options.privateKeyPath !== undefined) throw new InvalidArgument('privateKeyPath', 'and privateKey are exclusive: give one key');
  if (options.privateKey !== undefined && typeof options.privateKey !== 'string' && !Buffer.isBuffer(options.privateKey)) {
    throw new InvalidArgument('privateKey', 'must be a string or a Buffer holding a private key');
  }
  let privateKey = options.privateKey;
  const path = text('privateKeyPath', options.privateKeyPath, false);
  if (path !== undefined) {
    try {
      privateKey = readFileSync(path);
    } catch (error) {
      throw new InvalidArgument('privateKeyPath', `cannot be read: ${(error as Error).message}`);
    }
  }
  const agent = text('agent', options.agent, false) ?? (privateKey === undefined ? process.env['SSH_AUTH_SOCK'] || undefined : undefined);
  if (privateKey === undefined && agent === undefined) {
    throw new InvalidArgument('privateKey', 'nor privateKeyPath nor agent is given, and SSH_AUTH_SOCK is not set: give a way to authenticate');
  }
  const fingerprint = options.hostFingerprint;
  if (fingerprint !== undefined && typeof fingerprint !== 'string' && !(Array.isArray(fingerprint) && fingerprint.every((entry) => typeof entry === 'string'))) {
    throw new InvalidArgument('hostFingerprint', 'must be a fingerprint (SHA256:...) or a list of them');
  }
  return {
    host,
    port: whole('port', options.port, 22, 1, 65_535),
    username,
    privateKey,
    passphrase: text('passphrase', options.passphrase, false),
    agent,
    knownHostsPath: text('knownHostsPath', options.knownHostsPath, false),
    hostFingerprint: fingerprint,
    connectTimeoutMs: nonNegativeOption('connectTimeoutMs', options.connectTimeoutMs, 20_000),
    keepaliveMs: nonNegativeOption('keepaliveMs', options.keepaliveMs, 5_000),
    channelsPerConnection: whole('channelsPerConnection', options.channelsPerConnection, 8, 1, 1_000),
  };
}
