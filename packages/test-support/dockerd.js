// A Docker Engine of the tests' own: dockerd with its data root, exec root,
// pid file and socket in a temporary directory (no bridge, no iptables), an
// image made with no registry (busybox-static's applets in an empty rootfs,
// `docker import`ed through the Engine API), and a stop that leaves nothing:
// the daemon by its pid, then its mounts and its directory. The tests that
// need an engine start one of these; where none can start they are skipped
// with the reason, and where `CI` is set that reason is a failure instead.
import { execFileSync, spawn } from 'node:child_process';
import { accessSync, chmodSync, closeSync, constants, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const SEARCH = ['/usr/sbin', '/usr/bin', '/sbin', '/bin', '/usr/local/sbin', '/usr/local/bin'];

function findExecutable(name) {
  for (const dir of SEARCH) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK);
      return `${dir}/${name}`;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Why no engine of the tests' own can start here, or undefined. */
export function dockerdMissing() {
  if (process.platform !== 'linux') return `dockerd runs only on Linux (this is ${process.platform})`;
  if (findExecutable('dockerd') === undefined) return 'dockerd is not installed (Debian: apt-get install docker.io)';
  if (process.getuid?.() !== 0) return 'dockerd needs root here (no rootless setup is configured)';
  if (findExecutable('busybox') === undefined) return 'busybox is not installed, so no image can be built without a registry (Debian: apt-get install busybox-static)';
  return undefined;
}

/** One request to the Engine API over its unix socket; resolves with the status and the body's text. */
export function engineRequest(socketPath, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { host: 'docker', ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The directories under `dir` that are mount points, deepest first. */
function mountsUnder(dir) {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point) => point !== undefined && (point === dir || point.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
}

/** The shared libraries `ldd` lists for a dynamically linked program (none for a static one). */
function librariesOf(program) {
  let listed;
  try {
    listed = execFileSync('ldd', [program], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    // "not a dynamic executable": nothing to copy.
    return [];
  }
  return listed
    .split('\n')
    .map((line) => /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line)?.[1])
    .filter((path) => path !== undefined);
}

/** Copies `path` (followed through symlinks) to the same path under `rootfs`. */
function copyIn(rootfs, path) {
  const target = join(rootfs, path);
  mkdirSync(dirname(target), { recursive: true });
  execFileSync('cp', ['-L', path, target]);
}

/**
 * A rootfs tarball of busybox-static's applets, `/etc/passwd` with root, user
 * and nobody, and a sticky /tmp; with `tools`, host programs copied in at
 * their paths with the libraries `ldd` lists (GNU `env` for the supervisor's
 * `--default-signal`, util-linux's `prlimit`), and with `librariesOf` only the
 * libraries of host programs a test bind-mounts in (node).
 */
function busyboxTarball(dir, tools = [], libraryPrograms = []) {
  const busybox = findExecutable('busybox');
  const rootfs = join(dir, 'rootfs');
  for (const sub of ['bin', 'etc', 'tmp', 'proc', 'dev', 'sys', 'root', 'home/user']) mkdirSync(join(rootfs, sub), { recursive: true });
  chmodSync(join(rootfs, 'tmp'), 0o1777);
  execFileSync('cp', [busybox, join(rootfs, 'bin/busybox')]);
  const applets = execFileSync(busybox, ['--list'], { encoding: 'utf8' }).split('\n').filter((name) => /^[\w.[-]+$/.test(name) && name !== 'busybox');
  for (const applet of applets) symlinkSync('busybox', join(rootfs, 'bin', applet));
  writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
  writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n');
  execFileSync('chown', ['1000:1000', join(rootfs, 'home/user')]);
  const libraries = new Set();
  for (const tool of tools) {
    copyIn(rootfs, tool);
    for (const library of librariesOf(tool)) libraries.add(library);
  }
  for (const program of libraryPrograms) for (const library of librariesOf(program)) libraries.add(library);
  for (const library of libraries) copyIn(rootfs, library);
  const tarball = join(dir, 'rootfs.tar');
  execFileSync('tar', ['-C', rootfs, '--numeric-owner', '-cf', tarball, '.']);
  rmSync(rootfs, { recursive: true, force: true });
  return tarball;
}

/**
 * Starts dockerd in a temporary directory and resolves once its API answers
 * `_ping`; rejects with the daemon's last log lines when it exits or does not
 * answer within `startTimeoutMs`. Call `stop()` in the test's teardown.
 * `liveRestore` starts it with `--live-restore` (containers outlive the
 * daemon). `halt()` and `start()` stop and start the same daemon again (same
 * data root, exec root and socket), for a test of a restart.
 */
export async function startDockerd(options = {}) {
  const missing = dockerdMissing();
  if (missing !== undefined) throw new Error(`cannot start dockerd: ${missing}`);
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const liveRestore = options.liveRestore === true;
  // Short: a unix socket path has at most 107 bytes.
  const dir = mkdtempSync(join(tmpdir(), 'ssd-'));
  const socketPath = join(dir, 'docker.sock');
  const logPath = join(dir, 'dockerd.log');
  const args = [
    '--data-root', join(dir, 'root'), '--exec-root', join(dir, 'exec'), '-H', `unix://${socketPath}`,
    '--pidfile', join(dir, 'dockerd.pid'), '--iptables=false', '--bridge=none', '--ip-forward=false',
    '--ip-masq=false', '--userland-proxy=false', '--log-level=warn', '--shutdown-timeout=2',
    ...(liveRestore ? ['--live-restore'] : []),
  ];
  const tail = () => readFileSync(logPath, 'utf8').trim().split('\n').slice(-8).join('\n');
  /** The daemon now running (or last run): its process, its exit once it came, and a promise of it. */
  let daemon;

  /** Spawns dockerd and waits for `_ping`; resolves with why it is not ready, or undefined. */
  async function launch() {
    const log = openSync(logPath, 'a');
    const child = spawn(findExecutable('dockerd'), args, { stdio: ['ignore', log, log], detached: false });
    closeSync(log);
    const current = { child, exited: undefined, exit: undefined };
    current.exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve((current.exited = { code, signal }))));
    daemon = current;
    const deadline = Date.now() + startTimeoutMs;
    let ready = false;
    while (!ready && current.exited === undefined && Date.now() < deadline) {
      ready = await engineRequest(socketPath, 'GET', '/_ping').then((res) => res.status === 200, () => false);
      if (!ready) await Promise.race([current.exit, new Promise((resolve) => setTimeout(resolve, 50))]);
    }
    if (ready) return undefined;
    return current.exited !== undefined ? `dockerd exited (${current.exited.signal ?? `code ${current.exited.code}`})` : `dockerd did not answer within ${startTimeoutMs} ms`;
  }

  /** Ends the daemon's process: `signal`, then SIGKILL after `graceMs`; resolves once it exited. */
  async function end(signal, graceMs) {
    const current = daemon;
    if (current.exited !== undefined) return;
    current.child.kill(signal);
    const timer = setTimeout(() => current.child.kill('SIGKILL'), graceMs);
    await current.exit;
    clearTimeout(timer);
  }

  const why = await launch();
  const ready = why === undefined;
  const engine = {
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
    /**
     * Builds the busybox image under `reference` (`repo:tag`) with `docker import`; resolves with the reference.
     * `options.tools`: host programs copied in with their libraries; `options.librariesOf`: only their libraries.
     */
    async importBusybox(reference = 'sandstream-busybox:test', options = {}) {
      const [repo, tag = 'latest'] = reference.split(':');
      const tarball = busyboxTarball(mkdtempSync(join(dir, 'image-')), options.tools, options.librariesOf);
      const res = await engineRequest(socketPath, 'POST', `/images/create?fromSrc=-&repo=${encodeURIComponent(repo)}&tag=${encodeURIComponent(tag)}`, readFileSync(tarball), {
        'content-type': 'application/x-tar',
      });
      if (res.status !== 200 || /"error"/.test(res.body)) throw new Error(`docker import of ${reference} failed (${res.status}): ${res.body.slice(0, 500)}`);
      return reference;
    },
    /**
     * Stops the daemon as a restart does, and keeps everything it has: `signal` (default SIGTERM, its
     * own shutdown: it stops the containers unless `liveRestore`; SIGKILL: a crash), SIGKILL after
     * `graceMs`. Resolves once it exited.
     */
    async halt({ signal = 'SIGTERM', graceMs = 20_000 } = {}) {
      await end(signal, graceMs);
    },
    /** Starts the halted daemon again (same data root, exec root and socket); resolves once its API answers. */
    async start() {
      if (daemon.exited === undefined) throw new Error('dockerd is running: halt() it first');
      const failed = await launch();
      if (failed !== undefined) throw new Error(`${failed}; its log ends:\n${tail()}`);
    },
    /** `halt()`, then `start()`. */
    async restart(haltOptions) {
      await engine.halt(haltOptions);
      await engine.start();
    },
    /** Stops the daemon by its pid (SIGTERM, SIGKILL after `graceMs`), unmounts what it left under its directory, removes it. */
    async stop(graceMs = 20_000) {
      // Containers of a halted daemon with live restore still run: only a daemon can end them.
      if (daemon.exited !== undefined && liveRestore && ready) await launch().catch(() => undefined);
      if (daemon.exited === undefined) {
        // What a test left running is killed first: dockerd would otherwise give each container its
        // shutdown timeout, and a test's teardown should not wait on a `sleep` that ignores SIGTERM.
        const listed = await engineRequest(socketPath, 'GET', '/containers/json').catch(() => undefined);
        const running = listed?.status === 200 ? JSON.parse(listed.body) : [];
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
