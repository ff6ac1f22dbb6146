// The test sshd of `@sandstream/adapter-ssh/server`, seen through the real ssh2 client: both accounts,
// the host key, a connection cut by killing its process, a restart, and a stop that leaves nothing.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { sshdMissing, startSshd, type SshAccount, type TestSshd } from '../src/server/index.js';

/** Why the tests are skipped, or undefined to run them (on CI: always run, and fail). */
const SKIP = process.env['CI'] !== undefined ? undefined : sshdMissing();

/** A connection of the ssh2 client and the host key it was shown. */
interface Connection {
  readonly client: Client;
  readonly hostKey: Buffer;
  /** Resolves once the connection closed. */
  readonly closed: Promise<void>;
}

/** Connects to `server` as `account` with the client key; resolves once authenticated. */
function connect(server: TestSshd, account: SshAccount): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    let hostKey: Buffer = Buffer.alloc(0);
    const closed = new Promise<void>((done) => client.once('close', () => done()));
    client.once('ready', () => resolve({ client, hostKey, closed }));
    client.once('error', reject);
    client.connect({
      host: server.host,
      port: server.port,
      username: account.username,
      privateKey: server.clientKey,
      readyTimeout: 10_000,
      hostVerifier: (key: Buffer) => {
        hostKey = key;
        return true;
      },
    });
  });
}

/** Runs `command` over `client`; resolves with its stdout, stderr and exit code. */
function exec(client: Client, command: string): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error, stream) => {
      if (error) return reject(error);
      let stdout = '';
      let stderr = '';
      stream.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      stream.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      stream.on('close', (code: number | null) => resolve({ stdout, stderr, code }));
    });
  });
}

/** Whether `pid` is in /proc as a process that has not exited (not a zombie). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Resolves with true once `promise` settles, or false after `ms`. */
function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
}

const describe_ = unless(describe, SKIP);

describe_('startSshd', () => {
  let server: TestSshd;
  const clients: Client[] = [];
  const open = async (account: SshAccount): Promise<Connection> => {
    const connection = await connect(server, account);
    clients.push(connection.client);
    return connection;
  };
  const realRunSshd = existsSync('/run/sshd');

  beforeAll(async () => {
    server = await startSshd();
  }, 30_000);
  afterAll(async () => {
    for (const client of clients) client.end();
    await server?.stop();
  }, 30_000);

  it('logs both accounts in with the client key, each with its uid and its own empty home', async () => {
    for (const account of [server.accounts.root, server.accounts.unprivileged]) {
      const { client } = await open(account);
      const { stdout, code } = await exec(client, 'id -u; echo $HOME; stat -c %u "$HOME"; ls -A "$HOME" | wc -l');
      expect(code).toBe(0);
      expect(stdout.split('\n')).toEqual([String(account.uid), account.home, String(account.uid), '0', '']);
      expect(statSync(account.home).uid).toBe(account.uid);
    }
    expect(server.accounts.unprivileged.uid).not.toBe(0);
    // The unprivileged account can create files in /tmp.
    const { client } = await open(server.accounts.unprivileged);
    const made = await exec(client, 'f=$(mktemp /tmp/sandstream-sshd-test.XXXXXX) && stat -c %u "$f" && rm "$f"');
    expect(made).toMatchObject({ stdout: `${server.accounts.unprivileged.uid}\n`, code: 0 });
    // The accounts exist inside the server's mount namespace only.
    expect(readFileSync('/etc/passwd', 'utf8')).not.toContain(server.dir);
    expect(existsSync('/run/sshd')).toBe(realRunSshd);
  });

  it('shows the host key it announces: hostPublicKey, fingerprint and known_hosts agree', async () => {
    const { hostKey } = await open(server.accounts.root);
    const [type, base64] = server.hostPublicKey.split(' ');
    expect(type).toBe('ssh-ed25519');
    expect(hostKey.toString('base64')).toBe(base64);
    expect(server.fingerprint).toBe(`SHA256:${createHash('sha256').update(hostKey).digest('base64').replace(/=+$/, '')}`);
    expect(readFileSync(server.knownHostsPath, 'utf8')).toBe(`[127.0.0.1]:${server.port} ${server.hostPublicKey}\n`);
    expect(readFileSync(server.clientKeyPath, 'utf8')).toBe(server.clientKey);
    expect(server.clientKey).toContain('BEGIN OPENSSH PRIVATE KEY');
  });

  it.each([
    ['root', 'SIGTERM to its pid'],
    ['unprivileged', 'SIGTERM to its pid'],
    ['root', 'SIGKILL to its pid'],
    ['root', 'SIGKILL to its process group'],
    ['unprivileged', 'SIGKILL to its process group'],
  ] as const)('cuts a connection of %s on %s, and only that one', async (name, how) => {
    const other = await open(server.accounts.root);
    await exec(other.client, 'true');
    const before = new Set(server.sessionPids());
    const victim = await open(server.accounts[name]);
    const added = server.sessionPids().filter((pid) => !before.has(pid));
    expect(added).toHaveLength(1);
    const pid = added[0]!;
    process.kill(how.endsWith('group') ? -pid : pid, how.startsWith('SIGTERM') ? 'SIGTERM' : 'SIGKILL');
    expect(await within(victim.closed, 5_000)).toBe(true);
    expect((await exec(other.client, 'echo alive')).stdout).toBe('alive\n');
  });

  it('restarts on the same port and keys: an existing connection lives on, a new one is accepted', async () => {
    const existing = await open(server.accounts.unprivileged);
    const { port, pid } = server;
    await server.restart();
    expect(server.port).toBe(port);
    expect(server.pid).not.toBe(pid);
    expect(alive(pid)).toBe(false);
    expect(await exec(existing.client, 'echo still here')).toMatchObject({ stdout: 'still here\n', code: 0 });
    const fresh = await open(server.accounts.unprivileged);
    expect(fresh.hostKey.toString('base64')).toBe(server.hostPublicKey.split(' ')[1]);
    expect((await exec(fresh.client, 'id -u')).stdout).toBe(`${server.accounts.unprivileged.uid}\n`);
  });

  it('stops everything it started, by pid, and removes its directory', async () => {
    const { client } = await open(server.accounts.root);
    // Left running: a background command, and one that left its session and its parent (reparented).
    const { stdout } = await exec(client, 'sleep 300 >/dev/null 2>&1 & echo $!; setsid sh -c \'sleep 301 >/dev/null 2>&1 & echo $!\'');
    const commands = stdout.trim().split('\n').map(Number);
    expect(commands).toHaveLength(2);
    const listener = server.pid;
    const sessions = server.sessionPids();
    expect(sessions.length).toBeGreaterThan(0);
    for (const pid of [listener, ...sessions, ...commands]) expect(alive(pid)).toBe(true);
    await server.stop();
    // Gone, or at most a zombie its new parent (init) has yet to reap.
    for (const pid of [listener, ...sessions, ...commands]) expect(alive(pid)).toBe(false);
    expect(existsSync(`/proc/${listener}`)).toBe(false);
    expect(existsSync(server.dir)).toBe(false);
    await server.stop();
  });
});
