/**
 * `@sandstream/adapter-docker/engine`: a Docker Engine of your own, for
 * tests and CI. dockerd with its data root, exec root, pid file and socket
 * in a temporary directory (no bridge, no iptables), an image made with no
 * registry (busybox-static's applets in an empty rootfs, `docker import`ed
 * through the Engine API), and a stop that leaves nothing: the daemon by its
 * pid, then its mounts and its directory. Linux, as root, with dockerd and
 * busybox installed: {@link dockerdMissing} says what is missing, so a test
 * can skip with the reason (or, under CI, fail with it).
 *
 * @packageDocumentation
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { busyboxTarball } from './busybox-image.js';
import { findExecutable } from './programs.js';

export { gvisorConfig, runscMissing, runscRoot } from './gvisor.js';

/** The status and body text of one Engine API request. */
export interface EngineResponse {
  readonly status: number;
  readonly body: string;
}

/** How a halted daemon is stopped: see {@link TestEngine.halt}. */
export interface HaltOptions {
  readonly signal?: 'SIGTERM' | 'SIGKILL';
  readonly graceMs?: number;
}

/** Options of {@link startDockerd}. */
export interface StartDockerdOptions {
  /** How long the daemon may take to answer `_ping` (default 60 s). */
  readonly startTimeoutMs?: number;
  /** `--live-restore`: containers, and the processes exec'd in them, outlive the daemon's stop. */
  readonly liveRestore?: boolean;
  /**
   * A daemon configuration (what `/etc/docker/daemon.json` holds), written to `daemon.json` in the
   * temporary directory and given as `--config-file`: `runtimes` registers OCI runtimes, such as
   * {@link gvisorConfig}'s `runsc`. Keys the command line sets too (`data-root`, `hosts`...) make
   * dockerd refuse to start.
   */
  readonly config?: Readonly<Record<string, unknown>>;
}

/** A dockerd of your own, in a temporary directory. */
export interface TestEngine {
  /** The temporary directory holding its data root, exec root, pid file, socket and log. */
  readonly dir: string;
  /** Its API socket: `DOCKER_HOST=unix://<socketPath>`. */
  readonly socketPath: string;
  /** The pid of the daemon now running (after a restart, the new one's). */
  readonly pid: number | undefined;
  /** Whether it was started with `--live-restore` (its containers outlive the daemon). */
  readonly liveRestore: boolean;
  /** Whether the daemon's process runs (false between `halt()` and `start()`). */
  readonly running: boolean;
  /** One request to its Engine API. */
  request(method: string, path: string, body?: string | Uint8Array, headers?: Record<string, string>): Promise<EngineResponse>;
  /**
   * Builds busybox-static's applets into an image `repo:tag` with no registry (`docker import`); resolves with the reference.
   * `tools`: host programs copied in at their paths with the libraries `ldd` lists (e.g. GNU `/usr/bin/env`, which the
   * remote supervisor needs for SIGINT to reach a command); `librariesOf`: only the libraries of host programs a test
   * bind-mounts into its containers (node).
   */
  importBusybox(reference?: string, options?: { readonly tools?: readonly string[]; readonly librariesOf?: readonly string[] }): Promise<string>;
  /**
   * Stops the daemon as a restart does and keeps everything it has: `signal` (default SIGTERM, its own shutdown,
   * which stops the containers unless `liveRestore`; SIGKILL for a crash), SIGKILL after `graceMs` (default 20 s).
   * Resolves once its process exited.
   */
  halt(options?: HaltOptions): Promise<void>;
  /** Starts the halted daemon again on the same data root, exec root and socket; resolves once its API answers. */
  start(): Promise<void>;
  /** `halt(options)`, then `start()`. */
  restart(options?: HaltOptions): Promise<void>;
  /**
   * Stops the daemon by its pid (its containers killed first), unmounts what it left, removes its directory. A
   * halted daemon with live restore is started again first: its containers still run, and only it can end them.
   */
  stop(graceMs?: number): Promise<void>;
}

/** Why no engine of your own can start on this machine, or undefined. */
export function dockerdMissing(): string | undefined {
  if (process.platform !== 'linux') return `dockerd runs only on Linux (this is ${process.platform})`;
  if (findExecutable('dockerd') === undefined) return 'dockerd is not installed (Debian: apt-get install docker.io)';
  if (process.getuid?.() !== 0) return 'dockerd needs root here (no rootless setup is configured)';
  if (findExecutable('busybox') === undefined) return 'busybox is not installed, so no image can be built without a registry (Debian: apt-get install busybox-static)';
  return undefined;
}

/** One request to the Engine API over its unix socket; resolves with the status and the body's text. */
export function engineRequest(
  socketPath: string,
  method: string,
  path: string,
  body?: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<EngineResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { host: 'docker', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The directories under `dir` that are mount points, deepest first. */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined && (point === dir || point.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
}

/** The daemon now running (or last run): its process, its exit once it came, and a promise of it. */
interface Daemon {
  readonly child: ChildProcess;
  exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exit: Promise<unknown>;
}

/**
 * Starts dockerd (no bridge, no iptables) with everything in a temporary
 * directory, and resolves once its API answers `_ping`; rejects with the
 * daemon's last log lines when it exits or does not answer within
 * `startTimeoutMs`. `halt()` and `start()` stop and start the same daemon
 * again (same data root, exec root and socket), for a test of a restart.
 * Call `stop()` in the teardown; check {@link dockerdMissing} first.
 *
 * @example
 * ```ts
 * const engine = await startDockerd();
 * try {
 *   const image = await engine.importBusybox();
 * } finally {
 *   await engine.stop();
 * }
 * ```
 */
export async function startDockerd(options: StartDockerdOptions = {}): Promise<TestEngine> {
  const missing = dockerdMissing();
  if (missing !== undefined) throw new Error(`cannot start dockerd: ${missing}`);
  const dockerd = findExecutable('dockerd')!;
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const liveRestore = options.liveRestore === true;
  // Short: a unix socket path has at most 107 bytes.
  const dir = mkdtempSync(join(tmpdir(), 'ssd-'));
  const socketPath = join(dir, 'docker.sock');
  const logPath = join(dir, 'dockerd.log');
  const configPath = join(dir, 'daemon.json');
  if (options.config !== undefined) writeFileSync(configPath, `${JSON.stringify(options.config, null, 2)}\n`);
  const args = [
    ...(options.config !== undefined ? ['--config-file', configPath] : []),
    '--data-root', join(dir, 'root'), '--exec-root', join(dir, 'exec'), '-H', `unix://${socketPath}`,
    '--pidfile', join(dir, 'dockerd.pid'), '--iptables=false', '--bridge=none', '--ip-forward=false',
    '--ip-masq=false', '--userland-proxy=false', '--log-level=warn', '--shutdown-timeout=2',
    ...(liveRestore ? ['--live-restore'] : []),
  ];
  const tail = (): string => readFileSync(logPath, 'utf8').trim().split('\n').slice(-8).join('\n');
  let daemon!: Daemon;

  /** Spawns dockerd and waits for `_ping`; resolves with why it is not ready, or undefined. */
  async function launch(): Promise<string | undefined> {
    const log = openSync(logPath, 'a');
    const child = spawn(dockerd, args, { stdio: ['ignore', log, log], detached: false });
    closeSync(log);
    const current: Daemon = {
      child,
      exited: undefined,
      exit: new Promise((resolve) => child.once('exit', (code, signal) => resolve((current.exited = { code, signal })))),
    };
    daemon = current;
    const deadline = Date.now() + startTimeoutMs;
    let ready = false;
    while (!ready && current.exited === undefined && Date.now() < deadline) {
      ready = await engineRequest(socketPath, 'GET', '/_ping').then(
        (res) => res.status === 200,
        () => false,
      );
      if (!ready) await Promise.race([current.exit, new Promise((resolve) => setTimeout(resolve, 50))]);
    }
    if (ready) return undefined;
    const exited = current.exited as Daemon['exited'];
    return exited !== undefined ? `dockerd exited (${exited.signal ?? `code ${exited.code}`})` : `dockerd did not answer within ${startTimeoutMs} ms`;
  }

  /** Ends the daemon's process: `signal`, then SIGKILL after `graceMs`; resolves once it exited. */
  async function end(signal: NodeJS.Signals, graceMs: number): Promise<void> {
    const current = daemon;
    if (current.exited !== undefined) return;
    current.child.kill(signal);
    const timer = setTimeout(() => current.child.kill('SIGKILL'), graceMs);
    await current.exit;
    clearTimeout(timer);
  }

  const why = await launch();
  const ready = why === undefined;
  const engine: TestEngine = {
    dir,
    socketPath,
    liveRestore,
    get pid() {
      return daemon.child.pid;
    },
    get running() {
      return daemon.exited === undefined;
    },
    request: (method, path, body, headers) => engineRequest(socketPath, method, path, body, headers),
    async importBusybox(reference = 'sandstream-busybox:test', imageOptions = {}) {
      const [repo = reference, tag = 'latest'] = reference.split(':');
      const tarball = busyboxTarball(mkdtempSync(join(dir, 'image-')), imageOptions.tools, imageOptions.librariesOf);
      const res = await engineRequest(socketPath, 'POST', `/images/create?fromSrc=-&repo=${encodeURIComponent(repo)}&tag=${encodeURIComponent(tag)}`, readFileSync(tarball), {
        'content-type': 'application/x-tar',
      });
      if (res.status !== 200 || /"error"/.test(res.body)) throw new Error(`docker import of ${reference} failed (${res.status}): ${res.body.slice(0, 500)}`);
      return reference;
    },
    async halt({ signal = 'SIGTERM', graceMs = 20_000 } = {}) {
      await end(signal, graceMs);
    },
    async start() {
      if (daemon.exited === undefined) throw new Error('dockerd is running: halt() it first');
      const failed = await launch();
      if (failed !== undefined) throw new Error(`${failed}; its log ends:\n${tail()}`);
    },
    async restart(haltOptions) {
      await engine.halt(haltOptions);
      await engine.start();
    },
    async stop(graceMs = 20_000) {
      // Containers of a halted daemon with live restore still run: only a daemon can end them.
      if (daemon.exited !== undefined && liveRestore && ready) await launch().catch(() => undefined);
      if (daemon.exited === undefined) {
        // What a test left running is killed first: dockerd would otherwise give each container its
        // shutdown timeout, and a test's teardown should not wait on a `sleep` that ignores SIGTERM.
        const listed = await engineRequest(socketPath, 'GET', '/containers/json').catch(() => undefined);
        const running = listed?.status === 200 ? (JSON.parse(listed.body) as Array<{ Id: string }>) : [];
        await Promise.all(running.map((c) => engineRequest(socketPath, 'POST', `/containers/${c.Id}/kill`).catch(() => undefined)));
        await end('SIGTERM', graceMs);
      }
      for (const point of mountsUnder(dir)) {
        try {
          execFileSync('umount', ['-l', point], { stdio: 'ignore' });
        } catch {
          // already gone with its parent
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (!ready) {
    const logged = tail();
    await engine.stop(5_000);
    throw new Error(`${why}; its log ends:\n${logged}`);
  }
  return engine;
}
