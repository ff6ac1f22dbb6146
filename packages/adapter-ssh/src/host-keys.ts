/**
 * Host key verification as OpenSSH does it: known_hosts files (plain,
 * wildcard, negated and hashed host patterns; `@revoked` and
 * `@cert-authority` markers) or pinned SHA256 fingerprints. Verification is
 * always on: there is no way to accept any key.
 */
import { createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { InvalidArgument } from '@sandstream/types';
import { HostKeyMismatch, HostKeyUnknown } from './errors.js';

/** Which hosts a known_hosts line is for: its patterns as written, or the salted hash of one name (`|1|salt|hash`). */
export type KnownHostPatterns =
  | { readonly hashed: false; readonly patterns: readonly string[] }
  | { readonly hashed: true; readonly salt: Buffer; readonly hash: Buffer };

/**
 * One line of a known_hosts file. An `@cert-authority` entry is kept (so a
 * caller can list it) but never matches a plain host key: it names the CA
 * that signs host certificates, which this adapter does not negotiate.
 */
export interface KnownHostEntry {
  /** The line's number in the text, from 1. */
  readonly line: number;
  readonly marker: '@revoked' | '@cert-authority' | undefined;
  readonly hosts: KnownHostPatterns;
  /** `ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`... (the blob's own type, checked). */
  readonly keyType: string;
  /** The key in SSH wire format: the base64 blob, decoded. */
  readonly key: Buffer;
  /** The rest of the line, `''` when none. */
  readonly comment: string;
}

/** A line {@link parseKnownHosts} skipped, and why. */
export interface MalformedKnownHostsLine {
  readonly line: number;
  readonly text: string;
  readonly reason: string;
}

/** The entries of a known_hosts text, in order; `malformed` lists the lines skipped. */
export interface KnownHosts extends Array<KnownHostEntry> {
  readonly malformed: readonly MalformedKnownHostsLine[];
}

/** What {@link checkHostKey} concludes; `expected` lists the fingerprints known_hosts has for the host and key type. */
export type HostKeyVerdict =
  | { readonly verdict: 'known' }
  | { readonly verdict: 'unknown' }
  | { readonly verdict: 'mismatch'; readonly expected: readonly string[] }
  | { readonly verdict: 'revoked' };

/**
 * The SHA256 fingerprint of a key in SSH wire format, as `ssh-keygen -l` and
 * `ssh` print it: `SHA256:` and the digest in base64 without `=` padding.
 *
 * @example
 * ```ts
 * import { readFileSync } from 'node:fs';
 * import { fingerprintOf } from '@sandstream/adapter-ssh';
 * const blob = Buffer.from(readFileSync('/etc/ssh/ssh_host_ed25519_key.pub', 'utf8').split(' ')[1] ?? '', 'base64');
 * console.log(fingerprintOf(blob)); // "SHA256:..."
 * ```
 */
export function fingerprintOf(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function strictBase64(text: string): Buffer | undefined {
  return BASE64.test(text) && text.length % 4 === 0 ? Buffer.from(text, 'base64') : undefined;
}

/** The type name an SSH wire-format key starts with, or undefined when the blob is not one. */
function blobType(key: Buffer): string | undefined {
  if (key.length < 4) return undefined;
  const length = key.readUInt32BE(0);
  if (length === 0 || length > key.length - 4) return undefined;
  return key.toString('latin1', 4, 4 + length);
}

function parseLine(text: string): Omit<KnownHostEntry, 'line'> | string {
  const match = /^(?:(@\S*)[ \t]+)?(\S+)[ \t]+(\S+)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(text);
  if (match === null) return 'expected [marker] hosts keytype base64-key [comment]';
  const [, marker, field = '', keyType = '', base64 = '', comment = ''] = match;
  if (marker !== undefined && marker !== '@revoked' && marker !== '@cert-authority') return `unknown marker ${marker}`;
  let hosts: KnownHostPatterns;
  if (field.startsWith('|')) {
    const parts = /^\|1\|([^|]+)\|([^|]+)$/.exec(field);
    const salt = strictBase64(parts?.[1] ?? '');
    const hash = strictBase64(parts?.[2] ?? '');
    if (salt?.length !== 20 || hash?.length !== 20) return 'malformed hashed host (expected |1|base64-salt|base64-hmac-sha1)';
    hosts = { hashed: true, salt, hash };
  } else {
    const patterns = field.split(',');
    if (patterns.some((p) => p === '' || p === '!')) return 'empty host pattern';
    hosts = { hashed: false, patterns };
  }
  const key = strictBase64(base64);
  if (key === undefined) return 'the key is not base64';
  const type = blobType(key);
  if (type !== keyType) return `the key blob is of type ${JSON.stringify(type ?? '')}, not ${keyType}`;
  return { marker: marker as KnownHostEntry['marker'], hosts, keyType, key, comment: comment.trim() };
}

/**
 * Parses a known_hosts text (OpenSSH's `sshd(8)` "SSH_KNOWN_HOSTS FILE
 * FORMAT"). Blank lines and `#` comments are ignored. A malformed line (an
 * unknown marker, a bad hash, a key that is not base64 or whose blob is not
 * of the type the line names, an SSH-1 key) is skipped, not fatal, and listed
 * in the result's `malformed`.
 *
 * @example
 * ```ts
 * import { readFileSync } from 'node:fs';
 * import { parseKnownHosts } from '@sandstream/adapter-ssh';
 * const entries = parseKnownHosts(readFileSync('/home/ci/.ssh/known_hosts', 'utf8'));
 * for (const bad of entries.malformed) console.warn(`known_hosts:${bad.line}: ${bad.reason}`);
 * ```
 */
export function parseKnownHosts(text: string): KnownHosts {
  const entries: KnownHostEntry[] = [];
  const malformed: MalformedKnownHostsLine[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.replace(/^[ \t]+/, '').replace(/[ \t\r]+$/, '');
    if (line === '' || line.startsWith('#')) return;
    const parsed = parseLine(line);
    if (typeof parsed === 'string') malformed.push({ line: index + 1, text: raw, reason: parsed });
    else entries.push({ line: index + 1, ...parsed });
  });
  return Object.assign(entries, { malformed });
}

/** OpenSSH's `match_pattern`: `*` matches any run of characters, `?` any one. */
function globMatch(text: string, pattern: string): boolean {
  let [t, p, star, resume] = [0, 0, -1, 0];
  while (t < text.length) {
    if (pattern[p] === '?' || (pattern[p] === text[t] && pattern[p] !== '*')) [t, p] = [t + 1, p + 1];
    else if (pattern[p] === '*') [star, resume, p] = [p, t, p + 1];
    else if (star !== -1) [p, t, resume] = [star + 1, resume + 1, resume + 1];
    else return false;
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

function matchesName(hosts: KnownHostPatterns, name: string): boolean {
  if (hosts.hashed) return createHmac('sha1', hosts.salt).update(name).digest().equals(hosts.hash);
  let positive = false;
  for (const pattern of hosts.patterns) {
    const negated = pattern.startsWith('!');
    if (globMatch(name, (negated ? pattern.slice(1) : pattern).toLowerCase())) {
      if (negated) return false;
      positive = true;
    }
  }
  return positive;
}

/** The name OpenSSH looks a host up by: `host` on port 22, `[host]:port` otherwise, lower-cased. */
function lookupName(host: string, port: number): string {
  const lower = host.toLowerCase();
  return port === 22 ? lower : `[${lower}]:${port}`;
}

/**
 * Decides whether `key` is the host key known_hosts expects for `host` on
 * `port`, as OpenSSH does. A line is for the host when one of its patterns
 * matches the lookup name (`host` on port 22, `[host]:port` otherwise) and no
 * negated (`!`) one does; a hashed line when its HMAC-SHA1 of the name is the
 * one written. Among those lines: `@revoked` with this key gives `revoked`
 * whatever the others say; else a line with this key gives `known`; else one
 * with another key of the same type gives `mismatch`; else `unknown` (also
 * when the host has keys of other types only: OpenSSH would negotiate one of
 * them, this check just reports it). `@cert-authority` lines never match a
 * plain key.
 *
 * @example
 * ```ts
 * import { checkHostKey, parseKnownHosts } from '@sandstream/adapter-ssh';
 * declare const serverKey: Buffer;
 * const entries = parseKnownHosts('[build.example.com]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIpHYB4GU8aMqoaVPemm3Tz5km+PdixkpqFCYLeo8Ji/\n');
 * const result = checkHostKey(entries, 'build.example.com', 2222, serverKey);
 * if (result.verdict === 'mismatch') console.warn(`expected ${result.expected.join(', ')}`);
 * ```
 */
export function checkHostKey(entries: readonly KnownHostEntry[], host: string, port: number, key: Buffer): HostKeyVerdict {
  const name = lookupName(host, port);
  const type = blobType(key);
  const lines = entries.filter((entry) => entry.marker !== '@cert-authority' && matchesName(entry.hosts, name));
  if (lines.some((entry) => entry.marker === '@revoked' && entry.key.equals(key))) return { verdict: 'revoked' };
  const plain = lines.filter((entry) => entry.marker === undefined);
  if (plain.some((entry) => entry.key.equals(key))) return { verdict: 'known' };
  const expected = plain.filter((entry) => entry.keyType === type).map((entry) => fingerprintOf(entry.key));
  return expected.length > 0 ? { verdict: 'mismatch', expected: [...new Set(expected)] } : { verdict: 'unknown' };
}

/** What {@link hostVerifier} checks the server's key against. */
export interface HostVerifierOptions {
  readonly host: string;
  readonly port: number;
  /** A known_hosts file; a missing one has no entries. Default: `~/.ssh/known_hosts`, unless `knownHosts` is given. */
  readonly knownHostsPath?: string | undefined;
  /** known_hosts lines; consulted with `knownHostsPath` when both are given. */
  readonly knownHosts?: string | undefined;
  /** The SHA256 fingerprint(s) the key must have (`SHA256:...`, or the base64 alone); when given, known_hosts is not consulted. */
  readonly hostFingerprint?: string | readonly string[] | undefined;
}

/** A host key check for ssh2's `ConnectConfig.hostVerifier`, remembering why it refused. */
export interface HostVerifier {
  /** The check, bound and synchronous: pass it as `hostVerifier`. */
  readonly verify: (key: Buffer) => boolean;
  /** Why the last `verify` refused the key, undefined when it accepted it (or has not run). */
  error(): HostKeyUnknown | HostKeyMismatch | undefined;
  /** The known_hosts lines skipped as malformed; `source` is the file's path or `the knownHosts option`. */
  readonly malformed: readonly (MalformedKnownHostsLine & { readonly source: string })[];
}

function canonicalFingerprint(value: unknown, key: string): string {
  const match = typeof value === 'string' ? /^(?:sha256:)?([A-Za-z0-9+/]{43})=?$/i.exec(value) : null;
  const base64 = match?.[1] ?? '';
  if (match === null || Buffer.from(base64, 'base64').toString('base64') !== `${base64}=`) {
    throw new InvalidArgument(key, 'must be a SHA256 host key fingerprint as `ssh-keygen -lf` prints it: SHA256: and 43 base64 characters');
  }
  return `SHA256:${base64}`;
}

function readKnownHosts(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return '';
    throw new InvalidArgument('options.knownHostsPath', `${path} cannot be read (${(error as Error).message})`);
  }
}

/**
 * Makes the host key check for one connection. With `hostFingerprint`, the
 * key's SHA256 fingerprint must be one of those given; otherwise the
 * known_hosts entries decide ({@link checkHostKey}): `knownHosts` and/or the
 * file at `knownHostsPath` (read now), by default `~/.ssh/known_hosts`. Only
 * a `known` key is accepted. When ssh2 ends the handshake because `verify`
 * returned false, `error()` is the error to throw: {@link HostKeyUnknown}, or
 * {@link HostKeyMismatch} (another key, a different pinned fingerprint, or a
 * key known_hosts marks `@revoked`).
 *
 * @throws InvalidArgument for an empty host, a port outside 1-65535, a malformed fingerprint, or a known_hosts file that exists but cannot be read.
 *
 * @example
 * ```ts
 * import { Client } from 'ssh2';
 * import { hostVerifier } from '@sandstream/adapter-ssh';
 * const check = hostVerifier({ host: 'build.example.com', port: 22 });
 * const client = new Client();
 * client.on('error', (error) => console.error(check.error() ?? error));
 * client.connect({ host: 'build.example.com', port: 22, username: 'ci', hostVerifier: check.verify });
 * ```
 */
export function hostVerifier(options: HostVerifierOptions): HostVerifier {
  const { host, port } = options;
  if (typeof host !== 'string' || host === '' || /[\s,]/.test(host)) throw new InvalidArgument('options.host', 'must be a host name or address');
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new InvalidArgument('options.port', 'must be an integer from 1 to 65535');
  type Refusal = HostKeyUnknown | HostKeyMismatch | undefined;
  let last: Refusal;
  const verifier = (decide: (key: Buffer, fingerprint: string) => Refusal, malformed: HostVerifier['malformed']): HostVerifier => ({
    verify: (key: Buffer): boolean => (last = decide(key, fingerprintOf(key))) === undefined,
    error: () => last,
    malformed,
  });
  const pinned = options.hostFingerprint;
  if (pinned !== undefined) {
    if (typeof pinned !== 'string' && (!Array.isArray(pinned) || pinned.length === 0)) {
      throw new InvalidArgument('options.hostFingerprint', 'must be a SHA256 fingerprint or a non-empty array of them');
    }
    const list = typeof pinned === 'string' ? [canonicalFingerprint(pinned, 'options.hostFingerprint')] : pinned.map((f, i) => canonicalFingerprint(f, `options.hostFingerprint[${i}]`));
    return verifier((_, fingerprint) => (list.includes(fingerprint) ? undefined : new HostKeyMismatch(host, port, fingerprint, list.join(', '))), []);
  }
  const sources: [string, string][] = [];
  if (options.knownHosts !== undefined) sources.push(['the knownHosts option', options.knownHosts]);
  const path = options.knownHostsPath ?? (options.knownHosts === undefined ? `${homedir()}/.ssh/known_hosts` : undefined);
  if (path !== undefined) sources.push([path, readKnownHosts(path)]);
  const parsed = sources.map(([source, text]) => ({ source, known: parseKnownHosts(text) }));
  const entries = parsed.flatMap(({ known }) => known);
  const where = sources.map(([source]) => source).join(' and ');
  return verifier(
    (key, fingerprint) => {
      const result = checkHostKey(entries, host, port, key);
      if (result.verdict === 'known') return undefined;
      if (result.verdict === 'unknown') return new HostKeyUnknown(host, port, fingerprint, where);
      return new HostKeyMismatch(host, port, fingerprint, result.verdict === 'revoked' ? '@revoked' : result.expected.join(', '));
    },
    parsed.flatMap(({ source, known }) => known.malformed.map((line) => ({ ...line, source }))),
  );
}
