/**
 * `@sandstream/adapter-ssh/server`: an OpenSSH server of your own, for tests
 * and CI. `/usr/sbin/sshd` on 127.0.0.1 and a free port, with its own
 * ed25519 host key, its own `sshd_config` and everything else in a temporary
 * directory, and two accounts (`root` and an unprivileged one) that log in
 * with one client key, made without touching the machine's /etc: sshd runs
 * in a private mount namespace where a generated passwd, group and shadow
 * are bind-mounted over the real ones. A stop ends the listener and every
 * process its connections started, by pid, and removes the directory.
 * Linux, as root: {@link sshdMissing} says what is missing, so a test can
 * skip with the reason (or, under CI, fail with it).
 *
 * @packageDocumentation
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UNPRIVILEGED, prepareDirectory, sshdConfig } from './files.js';
import { childrenOf, killAll, mountNamespace, processStat } from './processes.js';
import { banner, freePort, sshdVersion } from './probe.js';
import { findProgram } from './programs.js';

/** An account of a {@link TestSshd}: log in as `username` with its `clientKey`. */
export interface SshAccount {
  readonly username: string;
  readonly uid: number;
  /** Its home, in the server's directory, owned by it and empty at the start. */
  readonly home: string;
}

/** Options of {@link startSshd}. */
export interface StartSshdOptions {
  /** How long sshd may take to send its `SSH-2.0-` banner, at each start (default 15 s). */
  readonly startTimeoutMs?: number;
}

/** An sshd of your own on 127.0.0.1, in a temporary directory. */
export interface TestSshd {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** The pid of the listening sshd now running (after a restart, the new one's). */
  readonly pid: number;
  /** The temporary directory: keys, `sshd_config`, `sshd.log`, the generated /etc files and the homes. */
  readonly dir: string;
  /** sshd's log (`-e`, its own and its connections' lines), for diagnostics. */
  readonly logPath: string;
  /** The host key, `ssh-ed25519 AAAA...` (no comment). */
  readonly hostPublicKey: string;
  /** A known_hosts file naming `[127.0.0.1]:<port>` with the host key, for `ssh -o UserKnownHostsFile=`. */
  readonly knownHostsPath: string;
  /** The host key's fingerprint, `SHA256:...`, as `ssh-keygen -lf` prints it. */
  readonly fingerprint: string;
  /** A private key (OpenSSH format) that every account below accepts. */
  readonly clientKey: string;
  /** Where `clientKey` is, mode 0600, for `ssh -i`. */
  readonly clientKeyPath: string;
  /** `root` (uid 0) and `sandstream` (uid 60123, its own group), both with their home in `dir` and shell /bin/sh. */
  readonly accounts: { readonly root: SshAccount; readonly unprivileged: SshAccount };
  /**
   * The pids of the per-connection sshd processes of the listener now running (its children, one per
   * connection, the same for the connection's whole life), so that a test can cut a connection by killing
   * one. SIGTERM cuts any of them (sshd passes it on to the process serving the connection); so does
   * SIGKILL to its process group (`process.kill(-pid, 'SIGKILL')`). A SIGKILL to the pid alone cuts a
   * connection of root (whose per-connection process serves it) but not one of an unprivileged account:
   * that is served by the per-connection process's own child (`sshd: <user>@notty`), which, as with any
   * sshd, lives on without its privileged monitor. The connections of a listener stopped by
   * {@link TestSshd.restart} are not among them.
   */
  sessionPids(): number[];
  /**
   * Stops the listener (SIGTERM by its pid) and starts sshd again on the same port with the same keys,
   * accounts and configuration; resolves once it sends its banner. As with a real sshd restart, the
   * processes of existing connections live on and those connections keep working. The new listener runs in
   * a fresh mount namespace arranged the same way; the old one lives on as long as its connections do.
   */
  restart(): Promise<void>;
  /**
   * Ends the listener and every process the server started (connections, their commands, whatever those
   * left running, also from before a restart): SIGKILL by pid, found as the listeners' process trees and
   * as every process in the server's mount namespaces; waits until they are gone, then removes the
   * directory. Idempotent.
   */
  stop(): Promise<void>;
}

/** The sshd this server runs (its re-exec for each connection needs the absolute path). */
const SSHD = '/usr/sbin/sshd';

/** Why no test sshd can start on this machine, or undefined. */
export function sshdMissing(): string | undefined {
  if (process.platform !== 'linux') return `the test sshd runs only on Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'the test sshd needs root (for its accounts, in a mount namespace of its own)';
  if (findProgram('sshd', ['/usr/sbin']) === undefined) return `${SSHD} is not installed (Debian: apt-get install openssh-server)`;
  if (findProgram('ssh-keygen') === undefined) return 'ssh-keygen is not installed (Debian: apt-get install openssh-client)';
  const unshare = findProgram('unshare');
  if (unshare === undefined) return 'unshare is not installed (Debian: apt-get install util-linux)';
  if (findProgram('mount') === undefined) return 'mount is not installed (Debian: apt-get install mount)';
  const probe = spawnSync(unshare, ['--mount', '--propagation', 'private', '--', 'true'], { encoding: 'utf8', timeout: 5_000 });
  if (probe.status !== 0) return `no mount namespace can be made here (unshare --mount: ${(probe.stderr || String(probe.error ?? probe.signal)).trim()})`;
  return undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A listener started: its process, its exit once it came, and a promise of it. */
interface Listener {
  readonly child: ChildProcess;
  readonly pid: number;
  exited: boolean;
  readonly exit: Promise<void>;
}

/**
 * Starts sshd on 127.0.0.1 and a free port with everything in a temporary
 * directory, and resolves once the port sends sshd's banner; rejects with
 * the log's last lines when sshd exits or does not answer within
 * `startTimeoutMs`. Connect with `clientKey` as `accounts.root.username` or
 * `accounts.unprivileged.username`, and check the host key against
 * `hostPublicKey` or `knownHostsPath`. Call `stop()` in the teardown; check
 * {@link sshdMissing} first.
 *
 * @example
 * ```ts
 * import { Client } from 'ssh2';
 *
 * const server = await startSshd();
 * try {
 *   const client = new Client();
 *   client.connect({ host: server.host, port: server.port, username: server.accounts.unprivileged.username, privateKey: server.clientKey });
 *   // ... client.exec('id -u', ...)
 * } finally {
 *   await server.stop();
 * }
 * ```
 */
export async function startSshd(options: StartSshdOptions = {}): Promise<TestSshd> {
  const missing = sshdMissing();
  if (missing !== undefined) throw new Error(`cannot start sshd: ${missing}`);
  const startTimeoutMs = options.startTimeoutMs ?? 15_000;
  const dir = mkdtempSync(join(tmpdir(), 'sandstream-sshd-'));
  const logPath = join(dir, 'sshd.log');
  const configPath = join(dir, 'sshd_config');
  const knownHostsPath = join(dir, 'known_hosts');
  const listeners: Listener[] = [];
  // An open descriptor of each mount namespace the server used keeps it (and so its id) from being reused
  // by another process while stop() still looks for the server's processes by it.
  const namespaces = new Map<string, number>();
  let port = 0;
  let stopping: Promise<void> | undefined;
  const tail = (): string => readFileSync(logPath, 'utf8').trim().split('\n').slice(-8).join('\n');

  /** Spawns sshd in a new mount namespace and waits for its banner; resolves with why it is not up, or undefined. */
  async function launch(): Promise<string | undefined> {
    const log = openSync(logPath, 'a');
    const setpriv = findProgram('setpriv');
    const args = [
      '--mount', '--propagation', 'private', '--', '/bin/sh', join(dir, 'namespace.sh'), dir,
      // Should this process die without stop(), the listener ends with it (its connections do not).
      ...(setpriv !== undefined ? [setpriv, '--pdeathsig', 'TERM', '--'] : []),
      SSHD, '-D', '-e', '-f', configPath,
    ];
    // unshare and sh exec: the child's pid is the listener's.
    const child = spawn(findProgram('unshare')!, args, { stdio: ['ignore', log, log], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } });
    closeSync(log);
    let spawnError: Error | undefined;
    child.once('error', (error) => (spawnError = error));
    if (child.pid === undefined) {
      await sleep(0);
      return `unshare could not be spawned: ${spawnError?.message ?? 'no pid'}`;
    }
    const current: Listener = {
      child,
      pid: child.pid,
      exited: false,
      exit: new Promise((resolve) => child.once('exit', () => resolve(void (current.exited = true)))),
    };
    listeners.push(current);
    const deadline = Date.now() + startTimeoutMs;
    /** Keeps the listener's mount namespace from being freed and its id reused, until stop(). */
    const remember = (): void => {
      const ns = mountNamespace(current.pid);
      if (ns === undefined || ns === mountNamespace(process.pid) || namespaces.has(ns)) return;
      try {
        namespaces.set(ns, openSync(`/proc/${current.pid}/ns/mnt`, 'r'));
      } catch {
        // exited meanwhile
      }
    };
    while (!current.exited && Date.now() < deadline) {
      remember();
      if (await banner(port, Math.min(1_000, Math.max(deadline - Date.now(), 1)))) {
        remember();
        // The probe's connection process ends soon after it hangs up: let sessionPids() start empty.
        for (let i = 0; i < 50 && childrenOf(current.pid).length > 0; i++) await sleep(10);
        return undefined;
      }
      await Promise.race([current.exit, sleep(25)]);
    }
    if (current.exited) return `sshd exited (code ${current.child.exitCode ?? current.child.signalCode})`;
    return `sshd did not send its banner within ${startTimeoutMs} ms`;
  }

  /** Whether the log written from `offset` on says sshd could not have its port. */
  const portTaken = (offset: number): boolean =>
    /Bind to port \d+ .* failed|Cannot bind any address|Address already in use/.test(readFileSync(logPath, 'utf8').slice(offset));

  /** Launches on `port`, again while the port is taken (`newPort` picks another first, else the same after a pause). */
  async function launchOnPort(newPort: boolean): Promise<string | undefined> {
    let why: string | undefined;
    for (let attempt = 0; attempt < 5; attempt++) {
      if (newPort) {
        port = await freePort();
        writeFileSync(configPath, sshdConfig(dir, prepared.hostKeyPath, port, version));
        writeFileSync(knownHostsPath, `[127.0.0.1]:${port} ${prepared.hostPublicKey}\n`);
      }
      const offset = existsSync(logPath) ? readFileSync(logPath, 'utf8').length : 0;
      why = await launch();
      if (why === undefined || !portTaken(offset)) return why;
      appendFileSync(logPath, `(port ${port} taken, trying again)\n`);
      if (!newPort) await sleep(200);
    }
    return why;
  }

  const listener = (): Listener => listeners[listeners.length - 1]!;

  const version = sshdVersion(SSHD);
  let prepared: ReturnType<typeof prepareDirectory>;
  try {
    prepared = prepareDirectory(dir);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const why = await launchOnPort(true);

  const server: TestSshd = {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    get pid() {
      return listener().pid;
    },
    dir,
    logPath,
    hostPublicKey: prepared.hostPublicKey,
    knownHostsPath,
    fingerprint: prepared.fingerprint,
    clientKey: prepared.clientKey,
    clientKeyPath: prepared.clientKeyPath,
    accounts: {
      root: { username: 'root', uid: 0, home: prepared.rootHome },
      unprivileged: { username: UNPRIVILEGED.username, uid: UNPRIVILEGED.uid, home: prepared.unprivilegedHome },
    },
    sessionPids() {
      const current = listener();
      return current.exited ? [] : childrenOf(current.pid);
    },
    async restart() {
      if (stopping !== undefined) throw new Error('the test sshd is stopped');
      const current = listener();
      if (!current.exited) {
        current.child.kill('SIGTERM');
        const timer = setTimeout(() => current.child.kill('SIGKILL'), 5_000);
        await current.exit;
        clearTimeout(timer);
      }
      const failed = await launchOnPort(false);
      if (failed !== undefined) throw new Error(`${failed}; its log ends:\n${tail()}`);
    },
    stop() {
      stopping ??= (async () => {
        const left = await killAll(
          listeners.map((l) => l.pid).filter((pid, i) => !listeners[i]!.exited && processStat(pid) !== undefined),
          new Set(namespaces.keys()),
        );
        await Promise.all(listeners.map((l) => l.exit));
        for (const fd of namespaces.values()) closeSync(fd);
        namespaces.clear();
        rmSync(dir, { recursive: true, force: true });
        if (left.length > 0) throw new Error(`processes of the test sshd are still there after SIGKILL: ${left.join(', ')}`);
      })();
      return stopping;
    },
  };
  if (why !== undefined) {
    const logged = tail();
    await server.stop();
    throw new Error(`${why}; its log ends:\n${logged}`);
  }
  return server;
}
