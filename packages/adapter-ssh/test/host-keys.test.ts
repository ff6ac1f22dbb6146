import { execFileSync, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgument, TransportError } from '@sandstream/types';
import { Client, Server } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostKeyMismatch, HostKeyUnknown } from '../src/errors.js';
import { checkHostKey, fingerprintOf, hostVerifier, parseKnownHosts } from '../src/host-keys.js';

/** `pub`: `type base64` as in known_hosts; `fp`: what `ssh-keygen -lf` prints. */
type Key = { readonly pub: string; readonly blob: Buffer; readonly fp: string; readonly privatePath: string };

let dir: string;
const keys: Record<'a' | 'b' | 'c' | 'ecdsa', Key> = {} as never;

const sshKeygenFingerprint = (pubPath: string): string => execFileSync('ssh-keygen', ['-lf', pubPath], { encoding: 'utf8' }).split(' ')[1] ?? '';

function makeKey(name: string, type: string): Key {
  const privatePath = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', name, '-f', privatePath]);
  const [keyType = '', base64 = ''] = readFileSync(`${privatePath}.pub`, 'utf8').split(' ');
  return { pub: `${keyType} ${base64}`, blob: Buffer.from(base64, 'base64'), fp: sshKeygenFingerprint(`${privatePath}.pub`), privatePath };
}

/** Writes a known_hosts file and runs `ssh-keygen -H` on it: OpenSSH's own hashing. */
function hashedWithOpenSsh(text: string): string {
  const file = join(dir, `hashed-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, text);
  execFileSync('ssh-keygen', ['-H', '-f', file], { stdio: 'ignore' });
  return readFileSync(file, 'utf8');
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'host-keys-'));
  for (const name of ['a', 'b', 'c'] as const) keys[name] = makeKey(name, 'ed25519');
  keys.ecdsa = makeKey('ecdsa', 'ecdsa');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('fingerprintOf', () => {
  it('prints what ssh-keygen -lf prints, without padding', () => {
    for (const key of Object.values(keys)) {
      expect(key.fp).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
      expect(fingerprintOf(key.blob)).toBe(key.fp);
    }
    expect(fingerprintOf(keys.a.blob)).not.toBe(fingerprintOf(keys.b.blob));
  });

  it('agrees with ssh-keygen on a wire blob built from a node:crypto key', () => {
    const raw = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
    const string = (b: Buffer): Buffer => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
    const blob = Buffer.concat([string(Buffer.from('ssh-ed25519')), string(raw)]);
    writeFileSync(join(dir, 'node.pub'), `ssh-ed25519 ${blob.toString('base64')} node\n`);
    expect(fingerprintOf(blob)).toBe(sshKeygenFingerprint(join(dir, 'node.pub')));
  });
});

describe('parseKnownHosts', () => {
  it('reads markers, patterns, hashes and comments; skips blanks and comments', () => {
    const hashed = hashedWithOpenSsh(`example.com ${keys.a.pub}\n`).trim();
    const text = `# a comment\n\n  \t\r\nexample.com,!x.example.com ${keys.a.pub} my comment here\r\n@revoked * ${keys.b.pub}\n@cert-authority *.corp ${keys.c.pub}\n${hashed}\n`;
    const entries = parseKnownHosts(text);
    expect(entries.malformed).toEqual([]);
    expect(entries.map((e) => [e.line, e.marker, e.keyType, e.comment])).toEqual([
      [4, undefined, 'ssh-ed25519', 'my comment here'],
      [5, '@revoked', 'ssh-ed25519', ''],
      [6, '@cert-authority', 'ssh-ed25519', ''],
      [7, undefined, 'ssh-ed25519', ''],
    ]);
    expect(entries[0]?.hosts).toEqual({ hashed: false, patterns: ['example.com', '!x.example.com'] });
    expect(entries[0]?.key.equals(keys.a.blob)).toBe(true);
    expect(entries[3]?.hosts.hashed).toBe(true);
  });

  it('skips malformed lines and reports each with its number and reason', () => {
    const [, a64] = keys.a.pub.split(' ');
    const lines = [
      `@bogus host ${keys.a.pub}`,
      'host ssh-ed25519',
      `host ssh-ed25519 ${a64}!!`,
      `host ssh-rsa ${a64}`,
      `|1|abc|def ${keys.a.pub}`,
      `|1|${Buffer.alloc(8).toString('base64')}|${Buffer.alloc(20).toString('base64')} ${keys.a.pub}`,
      `a,,b ${keys.a.pub}`,
      'oldhost 2048 65537 1234567',
      `good ${keys.a.pub}`,
    ];
    const entries = parseKnownHosts(lines.join('\n'));
    expect(entries.map((e) => e.line)).toEqual([9]);
    expect(entries.malformed.map((m) => m.line)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(entries.malformed[0]).toMatchObject({ text: lines[0], reason: 'unknown marker @bogus' });
    expect(entries.malformed[3]?.reason).toMatch(/ssh-ed25519.*ssh-rsa/);
  });
});

describe('checkHostKey', () => {
  const verdict = (text: string, host: string, port: number, key: Key): string => checkHostKey(parseKnownHosts(text), host, port, key.blob).verdict;

  it('knows the key a matching line lists, case-insensitively', () => {
    const text = `other.host ${keys.b.pub}\nexample.com ${keys.a.pub}\n`;
    expect(verdict(text, 'example.com', 22, keys.a)).toBe('known');
    expect(verdict(text, 'EXAMPLE.com', 22, keys.a)).toBe('known');
    expect(verdict(text, 'nowhere.com', 22, keys.a)).toBe('unknown');
  });

  it('reports a mismatch, with the expected fingerprints, for another key of the same type', () => {
    const text = `example.com ${keys.a.pub}\nexample.com,www ${keys.c.pub}\n*.com ${keys.a.pub}\nexample.com ${keys.ecdsa.pub}\n`;
    expect(checkHostKey(parseKnownHosts(text), 'example.com', 22, keys.b.blob)).toEqual({ verdict: 'mismatch', expected: [keys.a.fp, keys.c.fp] });
    // A line with the key wins over lines with other keys.
    expect(verdict(text, 'example.com', 22, keys.c)).toBe('known');
  });

  it('treats a host known only by keys of other types as unknown', () => {
    expect(verdict(`example.com ${keys.ecdsa.pub}\n`, 'example.com', 22, keys.a)).toBe('unknown');
    expect(verdict(`example.com ${keys.a.pub}\n`, 'example.com', 22, keys.ecdsa)).toBe('unknown');
  });

  it('looks a host up as host on port 22 and [host]:port on any other', () => {
    const text = `example.com ${keys.a.pub}\n[example.com]:2222 ${keys.b.pub}\n`;
    expect(verdict(text, 'example.com', 22, keys.a)).toBe('known');
    expect(verdict(text, 'example.com', 2222, keys.b)).toBe('known');
    expect(verdict(text, 'example.com', 2222, keys.a)).toBe('mismatch');
    expect(verdict(text, 'example.com', 2200, keys.a)).toBe('unknown');
    expect(verdict(`[example.com]:22 ${keys.a.pub}\n`, 'example.com', 22, keys.a)).toBe('unknown');
  });

  it('matches wildcards and negations as ssh-keygen -F does', () => {
    const text = `*.example.com,!bad.example.com,!*.internal.example.com ${keys.a.pub}\n[h?.test]:2222,10.0.0.* ${keys.a.pub}\n[*]:2200 ${keys.a.pub}\n`;
    const file = join(dir, 'patterns');
    writeFileSync(file, text);
    const cases: [string, number, boolean][] = [
      ['a.example.com', 22, true], ['a.b.example.com', 22, true], ['example.com', 22, false],
      ['bad.example.com', 22, false], ['x.internal.example.com', 22, false], ['h1.test', 2222, true],
      ['h12.test', 2222, false], ['h1.test', 22, false], ['10.0.0.7', 22, true], ['10.0.1.7', 22, false],
      ['any.host', 2200, true], ['bad.example.com', 2200, true],
    ];
    for (const [host, port, expected] of cases) {
      const name = port === 22 ? host : `[${host}]:${port}`;
      const openssh = spawnSync('ssh-keygen', ['-F', name, '-f', file]).status === 0;
      expect([name, verdict(text, host, port, keys.a) === 'known']).toEqual([name, expected]);
      expect([name, openssh]).toEqual([name, expected]);
    }
  });

  it('matches lines hashed by ssh-keygen -H', () => {
    const text = hashedWithOpenSsh(`example.com ${keys.a.pub}\n[example.com]:2222 ${keys.b.pub}\nwww.example.com,10.1.2.3 ${keys.c.pub}\n`);
    expect(text).not.toContain('example.com');
    const entries = parseKnownHosts(text);
    expect(entries.every((e) => e.hosts.hashed)).toBe(true);
    expect(entries).toHaveLength(4); // one hashed line per name
    expect(verdict(text, 'example.com', 22, keys.a)).toBe('known');
    expect(verdict(text, 'example.com', 2222, keys.b)).toBe('known');
    expect(verdict(text, 'www.example.com', 22, keys.c)).toBe('known');
    expect(verdict(text, '10.1.2.3', 22, keys.c)).toBe('known');
    expect(checkHostKey(entries, 'example.com', 2222, keys.a.blob)).toEqual({ verdict: 'mismatch', expected: [keys.b.fp] });
    expect(verdict(text, 'example.org', 22, keys.a)).toBe('unknown');
  });

  it('refuses a key marked @revoked for the host, whatever other lines say', () => {
    const text = `example.com ${keys.a.pub}\n@revoked *.com ${keys.a.pub}\n@revoked example.com ${keys.b.pub}\nexample.com ${keys.c.pub}\n`;
    expect(verdict(text, 'example.com', 22, keys.a)).toBe('revoked');
    expect(verdict(text, 'example.com', 22, keys.b)).toBe('revoked');
    expect(verdict(text, 'example.com', 22, keys.c)).toBe('known');
    expect(verdict(`@revoked other.org ${keys.a.pub}\nexample.com ${keys.a.pub}\n`, 'example.com', 22, keys.a)).toBe('known');
    // A revoked line is no expectation: it does not make another key a mismatch.
    expect(verdict(`@revoked example.com ${keys.a.pub}\n`, 'example.com', 22, keys.b)).toBe('unknown');
    // An @cert-authority line names a CA, never a plain host key.
    expect(verdict(`@cert-authority *.example.com ${keys.a.pub}\n`, 'a.example.com', 22, keys.a)).toBe('unknown');
    expect(verdict(`@cert-authority *.example.com ${keys.a.pub}\n`, 'a.example.com', 22, keys.b)).toBe('unknown');
  });
});

describe('hostVerifier', () => {
  it('accepts a known key and refuses an unknown one with HostKeyUnknown', () => {
    const check = hostVerifier({ host: 'example.com', port: 2222, knownHosts: `[example.com]:2222 ${keys.a.pub}\n` });
    expect(check.verify(keys.a.blob)).toBe(true);
    expect(check.error()).toBeUndefined();
    expect(check.verify(keys.ecdsa.blob)).toBe(false);
    const error = check.error();
    expect(error).toBeInstanceOf(HostKeyUnknown);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ code: 'TRANSPORT', host: 'example.com', port: 2222, fingerprint: keys.ecdsa.fp, where: 'the knownHosts option' });
    expect(error?.message).toContain('ssh-keyscan -p 2222 example.com >>');
    expect(error?.message).toContain(`hostFingerprint: '${keys.ecdsa.fp}'`);
    expect(check.verify(keys.a.blob)).toBe(true);
    expect(check.error()).toBeUndefined();
  });

  it('refuses another key, or a revoked one, with HostKeyMismatch', () => {
    const check = hostVerifier({ host: 'example.com', port: 22, knownHosts: `example.com ${keys.a.pub}\n@revoked * ${keys.c.pub}\n` });
    expect(check.verify(keys.b.blob)).toBe(false);
    expect(check.error()).toBeInstanceOf(HostKeyMismatch);
    expect(check.error()).toMatchObject({ fingerprint: keys.b.fp, expected: keys.a.fp });
    expect(check.error()?.message).toMatch(/man-in-the-middle.*nothing was sent/);
    expect(check.verify(keys.c.blob)).toBe(false);
    expect(check.error()).toMatchObject({ fingerprint: keys.c.fp, expected: '@revoked' });
  });

  it('reads knownHostsPath; a missing file is no entries', () => {
    const file = join(dir, 'known_hosts');
    writeFileSync(file, `example.com ${keys.a.pub}\nbroken line\n`);
    const check = hostVerifier({ host: 'example.com', port: 22, knownHostsPath: file });
    expect(check.verify(keys.a.blob)).toBe(true);
    expect(check.malformed).toEqual([expect.objectContaining({ line: 2, source: file })]);
    const none = hostVerifier({ host: 'example.com', port: 22, knownHostsPath: join(dir, 'nope', 'known_hosts') });
    expect(none.verify(keys.a.blob)).toBe(false);
    expect(none.error()).toMatchObject({ name: 'HostKeyUnknown', where: join(dir, 'nope', 'known_hosts') });
    expect(none.error()?.message).toContain(`ssh-keyscan -p 22 example.com >> ${join(dir, 'nope', 'known_hosts')}`);
    const both = hostVerifier({ host: 'example.com', port: 22, knownHosts: `example.com ${keys.b.pub}\n`, knownHostsPath: file });
    expect([both.verify(keys.a.blob), both.verify(keys.b.blob), both.verify(keys.c.blob)]).toEqual([true, true, false]);
    expect(both.error()).toMatchObject({ name: 'HostKeyMismatch', expected: `${keys.b.fp}, ${keys.a.fp}` });
  });

  it('reads ~/.ssh/known_hosts by default', () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, '.ssh'), { recursive: true });
    writeFileSync(join(home, '.ssh', 'known_hosts'), `example.com ${keys.b.pub}\n`);
    const saved = process.env['HOME'];
    process.env['HOME'] = home;
    try {
      const check = hostVerifier({ host: 'example.com', port: 22 });
      expect(check.verify(keys.b.blob)).toBe(true);
      expect(check.verify(keys.a.blob)).toBe(false);
      expect(check.error()).toBeInstanceOf(HostKeyMismatch);
      // knownHosts alone replaces the default file.
      expect(hostVerifier({ host: 'example.com', port: 22, knownHosts: '' }).verify(keys.b.blob)).toBe(false);
    } finally {
      if (saved === undefined) delete process.env['HOME'];
      else process.env['HOME'] = saved;
    }
  });

  it('pins fingerprints as ssh-keygen -lf prints them, without consulting known_hosts', () => {
    const knownHosts = `example.com ${keys.b.pub}\n@revoked * ${keys.a.pub}\n`;
    expect(hostVerifier({ host: 'example.com', port: 22, knownHosts, hostFingerprint: keys.a.fp }).verify(keys.a.blob)).toBe(true);
    expect(hostVerifier({ host: 'example.com', port: 22, hostFingerprint: keys.a.fp.slice('SHA256:'.length) }).verify(keys.a.blob)).toBe(true);
    const check = hostVerifier({ host: 'example.com', port: 22, knownHosts, hostFingerprint: [keys.c.fp, keys.ecdsa.fp] });
    expect(check.verify(keys.ecdsa.blob)).toBe(true);
    expect(check.verify(keys.b.blob)).toBe(false);
    expect(check.error()).toMatchObject({ name: 'HostKeyMismatch', fingerprint: keys.b.fp, expected: `${keys.c.fp}, ${keys.ecdsa.fp}` });
  });

  it('rejects malformed options up front with InvalidArgument', () => {
    const good = keys.a.fp;
    const bad: [unknown, string][] = [
      ['SHA256:abc', 'options.hostFingerprint'],
      [`MD5:${'ab:'.repeat(15)}ab`, 'options.hostFingerprint'],
      ['', 'options.hostFingerprint'],
      [`${good.slice(0, -1)}B`, 'options.hostFingerprint'], // not canonical: 43 characters carry 258 bits
      [`${good}x`, 'options.hostFingerprint'],
      [[], 'options.hostFingerprint'],
      [[good, 'nope'], 'options.hostFingerprint[1]'],
    ];
    for (const [hostFingerprint, key] of bad) {
      const call = (): unknown => hostVerifier({ host: 'h', port: 22, hostFingerprint: hostFingerprint as string });
      expect(call).toThrow(InvalidArgument);
      expect(call).toThrow(expect.objectContaining({ key }));
    }
    for (const [host, port] of [['', 22], ['a host', 22], ['h', 0], ['h', 22.5], ['h', 65536]] as const) {
      expect(() => hostVerifier({ host, port, knownHosts: '' })).toThrow(InvalidArgument);
    }
  });
});

describe('with ssh2', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = new Server({ hostKeys: [readFileSync(keys.a.privatePath)] }, (conn) => {
      conn.on('authentication', (ctx) => ctx.accept()).on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const connect = (verify: (key: Buffer) => boolean): Promise<'ready' | Error> =>
    new Promise((resolve) => {
      const client = new Client();
      client.on('ready', () => (client.end(), resolve('ready'))).on('error', (error) => resolve(error));
      client.connect({ host: '127.0.0.1', port, username: 'u', hostVerifier: verify, readyTimeout: 10_000 });
    });

  it('is a working ConnectConfig.hostVerifier: ssh2 hands it the wire blob', async () => {
    const known = hostVerifier({ host: '127.0.0.1', port, knownHosts: `[127.0.0.1]:${port} ${keys.a.pub}\n` });
    expect(await connect(known.verify)).toBe('ready');
    const unknown = hostVerifier({ host: '127.0.0.1', port, knownHosts: `[127.0.0.1]:${port} ${keys.ecdsa.pub}\n` });
    expect(await connect(unknown.verify)).toBeInstanceOf(Error);
    expect(unknown.error()).toMatchObject({ name: 'HostKeyUnknown', fingerprint: keys.a.fp });
    const pinned = hostVerifier({ host: '127.0.0.1', port, hostFingerprint: keys.b.fp });
    expect(await connect(pinned.verify)).toBeInstanceOf(Error);
    expect(pinned.error()).toMatchObject({ name: 'HostKeyMismatch', fingerprint: keys.a.fp });
  });
});
