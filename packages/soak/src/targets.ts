/**
 * The adapters a soak runs against, behind one face: a shared sandbox for
 * most commands, fresh sandboxes for the commands whose ending closes the
 * whole sandbox, and the backend's own view of what is still running.
 *
 * The remote adapters run against their emulators, hosted in a child process
 * (see `emulator-host.ts`): their SDKs and the adapters live in this process,
 * the emulated remote side does not.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { chownSync, copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { createE2BSandbox } from '@sandstream/adapter-e2b';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { createVercelSandbox } from '@sandstream/adapter-vercel';
import { createDockerSandbox } from '@sandstream/adapter-docker';
import { gvisorConfig, startDockerd } from '@sandstream/adapter-docker/engine';
import { createSshSandbox, type SshSandboxOptions } from '@sandstream/adapter-ssh';
import { startSshd } from '@sandstream/adapter-ssh/server';
import type { Sandbox } from '@sandstream/types';
import type { OwnerPlace } from './owner-join.js';
import type { Percentiles } from './stats.js';
import { inheritedEnv } from '@sandstream/types/runtime';

export const ADAPTERS = ['local', 'e2b', 'vercel', 'docker', 'ssh'] as const;
export type AdapterName = (typeof ADAPTERS)[number];

/** The marker variable every soak command carries; its value is the run's id. */
export const MARKER = 'SANDSTREAM_SOAK';

/** Settings of a target. */
export interface TargetOptions {
  /** The run's id, the value of {@link MARKER} in every command's environment. */
  readonly runId: string;
  /** Grace period between SIGTERM and SIGKILL. */
  readonly graceMs: number;
  /**
   * The remote adapters' kill wait (how long the end may take to be reported
   * after SIGKILL before the command fails with TransportError). The local
   * adapter derives its own from the grace period.
   */
  readonly killWaitMs: number;
  /**
   * Local only, for the runner's own tests: `false` opens the owner processes' sandboxes (the
   * `owner-killed` ending) without the adapter's guardian, so their commands outlive them.
   */
  readonly ownerGuard?: boolean;
  /**
   * Docker only: the OCI runtime of the run's container. `'runsc'` registers gVisor on the soak's
   * dockerd (`gvisorConfig()`); default the daemon's (runc).
   */
  readonly dockerRuntime?: string;
}

/** An adapter ready for a soak. */
export interface Target {
  readonly adapter: AdapterName;
  /** The sandbox most commands run in. */
  readonly shared: Sandbox;
  /** A fresh sandbox, for commands whose ending closes it. */
  openSandbox(): Promise<Sandbox>;
  /** Where an owner process of the `owner-killed` ending opens a sandbox on the same environment. */
  readonly owner: OwnerPlace;
  /** What the backend's own process table lists as running (empty for local: the host's table is the backend's). */
  backendSurvivors(): Promise<string[]>;
  /**
   * The live processes with `name=value` in their environment, for a backend whose processes the
   * host's `/proc` does not show (Docker under gVisor); absent where the host's table is the
   * backend's. Their pids are the backend's, never to be signalled from the host.
   */
  readonly marked?: (name: string, value: string) => Promise<{ pid: number; cmdline: string }[]>;
  /**
   * Files that appeared in the sandbox's scratch places during the run (the adapter's files for
   * commands that are over), or why they cannot be told apart from others' here.
   */
  readonly leftovers: (() => Promise<string[]>) | { readonly notChecked: string };
  /** The emulator's own event loop, measured from `start()` to `stop()`; absent without an emulator process. */
  readonly emulatorLoop?: { start(): Promise<void>; stop(): Promise<Percentiles | undefined> };
  /** Closes the shared sandbox and stops the emulator, if any. */
  close(): Promise<void>;
}

/** Creates the target of `adapter`. */
export async function createTarget(adapter: AdapterName, options: TargetOptions): Promise<Target> {
  switch (adapter) {
    case 'local':
      return localTarget(options);
    case 'e2b':
      return e2bTarget(options);
    case 'vercel':
      return vercelTarget(options);
    case 'docker':
      return dockerTarget(options);
    case 'ssh':
      return sshTarget(options);
  }
}

/**
 * Opens what an adapter keeps for the life of this process once it ran a command, so that the
 * run's first snapshot counts it and it is not taken for the target's: the local adapter's
 * guardian (spec 1.4), one `sh` per process started by its first command, its pipe a socket.
 */
export async function warmProcess(adapter: AdapterName): Promise<void> {
  if (adapter !== 'local') return;
  const sandbox = createLocalSandbox();
  try {
    await sandbox.run(['true']);
  } finally {
    await sandbox.close();
  }
}

function localTarget(options: TargetOptions): Target {
  const open = (): Sandbox =>
    createLocalSandbox({ graceMs: options.graceMs, env: { ...inheritedEnv(), [MARKER]: options.runId } });
  const shared = open();
  return {
    adapter: 'local',
    shared,
    openSandbox: async () => open(),
    owner: { kind: 'local', guarded: options.ownerGuard ?? true },
    backendSurvivors: async () => [],
    leftovers: { notChecked: HOST_FILES },
    close: () => shared.close(),
  };
}

/**
 * Why a sandbox whose file system is this host's is not searched for files the adapter left: other
 * work on the machine writes to the same temporary directories, and none of these adapters keeps
 * a file there (a command is one process, its pipes the backend's).
 */
const HOST_FILES = "not checked: the sandbox's file system is this host's, shared with other work";

/** How a remote adapter opens sandboxes on the emulator its host started. */
interface RemoteSetup {
  readonly open: () => Promise<Sandbox>;
  /** Where an owner process finds the shared sandbox, once it is open. */
  readonly owner: (shared: Sandbox) => OwnerPlace;
  /** Removes what the setup made, once the emulator is gone. */
  readonly dispose?: () => void;
}

/** A remote adapter against its emulator, hosted in a child process; the emulator's table is the backend's. */
async function remoteTarget(adapter: 'e2b' | 'vercel', connect: (host: EmulatorHost) => Promise<RemoteSetup>): Promise<Target> {
  const host = await EmulatorHost.start();
  let setup: RemoteSetup | undefined;
  try {
    setup = await connect(host);
    const { open, dispose } = setup;
    const shared = await open();
    return {
      adapter,
      shared,
      openSandbox: open,
      owner: setup.owner(shared),
      backendSurvivors: async () => (await host.request({ op: 'survivors' })) as string[],
      // The emulators run commands on this host.
      leftovers: { notChecked: HOST_FILES },
      emulatorLoop: {
        start: async () => void (await host.request({ op: 'loop', action: 'start' })),
        stop: async () => ((await host.request({ op: 'loop', action: 'stop' })) as Percentiles | null) ?? undefined,
      },
      async close() {
        try {
          await shared.close();
        } finally {
          await host.close();
          dispose?.();
        }
      },
    };
  } catch (error) {
    await host.close();
    setup?.dispose?.();
    throw error;
  }
}

function e2bTarget(options: TargetOptions): Promise<Target> {
  return remoteTarget('e2b', async (host) => {
    const { url, recordBase } = (await host.request({ op: 'start', kind: 'e2b' })) as { url: string; recordBase: string };
    const native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: url });
    // The emulator switches accounts only when it runs as root.
    const accounts = process.getuid?.() === 0 ? {} : { capabilities: { user: false } };
    return {
      owner: () => ({ kind: 'e2b', url, recordBase, accounts: process.getuid?.() === 0 }),
      open: () =>
        createE2BSandbox({
          sandbox: native,
          owned: false,
          graceMs: options.graceMs,
          killWaitMs: options.killWaitMs,
          env: { [MARKER]: options.runId },
          recordBase,
          ...accounts,
        }),
    };
  });
}

function vercelTarget(options: TargetOptions): Promise<Target> {
  return remoteTarget('vercel', async (host) => {
    const { url, recordBase, credentials } = (await host.request({ op: 'start', kind: 'vercel' })) as {
      url: string;
      recordBase: string;
      credentials: { token: string; teamId: string; projectId: string };
    };
    // The adapter's own (loaded here only for Vercel: the emulators run in the host process).
    const { emulatorFetch } = await import('@sandstream/adapter-vercel/emulator');
    const fetch = emulatorFetch(url);
    return {
      // The shared sandbox, by its name (as the adapter's conformance module joins a run).
      owner: (shared) => ({ kind: 'vercel', url, recordBase, credentials, name: (shared.native as { name: string }).name }),
      open: () => createVercelSandbox({ ...credentials, fetch, recordBase, graceMs: options.graceMs, killWaitMs: options.killWaitMs, env: { [MARKER]: options.runId } }),
    };
  });
}

/**
 * A real Engine of the soak's own (test-support's dockerd, the busybox image
 * with GNU env, nice, prlimit and script copied in: `script` holds a
 * background command's terminal), one container it owns for the run, and handles
 * that borrow it. Under runc its processes are the host's (a container
 * shares the kernel), so the host's table is the backend's; under gVisor
 * they live in gVisor's kernel, and the container's own `/proc` is read.
 */
async function dockerTarget(options: TargetOptions): Promise<Target> {
  const runtime = options.dockerRuntime;
  const engine = await startDockerd(runtime === 'runsc' ? { config: gvisorConfig() } : {});
  try {
    const image = await engine.importBusybox('sandstream-busybox:soak', { tools: ['/usr/bin/env', '/usr/bin/nice', '/usr/bin/prlimit', '/usr/bin/script'] });
    const owner = await createDockerSandbox({ socketPath: engine.socketPath, image, ...(runtime === undefined ? {} : { runtime }) });
    // The scan runs through the owner's handle, whose commands carry no marker.
    const marked = async (name: string, value: string): Promise<{ pid: number; cmdline: string }[]> => {
      const result = await owner.run(['sh', '-c', MARKED_SCAN, 'scan', `${name}=${value}`]);
      return result.stdoutText
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          const [pid = '', ...words] = line.trim().split(' ');
          return { pid: Number(pid), cmdline: words.join(' ') };
        });
    };
    const inGvisor = runtime !== undefined && runtime !== 'runc';
    const open = (): Promise<Sandbox> =>
      createDockerSandbox({
        socketPath: engine.socketPath,
        container: owner.native.id,
        graceMs: options.graceMs,
        killWaitMs: options.killWaitMs,
        env: { [MARKER]: options.runId },
      });
    const shared = await open();
    // The container is the run's alone: whatever appears in its scratch places was left by the run.
    const before = new Set(await scratchEntries(owner));
    return {
      adapter: 'docker',
      shared,
      openSandbox: open,
      owner: { kind: 'docker', socketPath: engine.socketPath, container: owner.native.id },
      backendSurvivors: async () => (inGvisor ? (await marked(MARKER, options.runId)).map((p) => `${p.pid} ${p.cmdline.slice(0, 200)}`) : []),
      ...(inGvisor ? { marked } : {}),
      leftovers: async () => (await scratchEntries(owner)).filter((entry) => !before.has(entry)),
      async close() {
        try {
          await shared.close();
          await owner.close();
        } finally {
          await engine.stop();
        }
      },
    };
  } catch (error) {
    await engine.stop();
    throw error;
  }
}

/**
 * A real OpenSSH server of the soak's own (`@sandstream/adapter-ssh/server`: sshd on 127.0.0.1 in a
 * temporary directory and a mount namespace of its own), logged in as its unprivileged account with
 * its client key, the host key checked against its known_hosts. Every handle is one of its own on
 * that account (as the adapter's conformance module joins a run). The server's processes are this
 * host's, so the host's table is the backend's. The records and owner leases of the remote driver
 * are made in a directory of the run's own (`recordBase`), which is listed before the run and after
 * it with the account's home (empty at the start): every new entry is a file the adapter left.
 */
/**
 * Whether `path` is an owner lease (ADR-0049) that lapsed: a dead owner's whose command ended
 * before the lapse, so no supervisor saw it; the next renewal or close of any handle on the
 * sandbox removes it, by design. The server is this host, so its uptime is the sandbox's clock.
 */
function lapsedLease(path: string): boolean {
  if (!/\.sandstream-owner-[^/]*$/.test(path)) return false;
  try {
    const deadline = Number(readFileSync(path, 'utf8').trim());
    const now = Math.floor(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
    return Number.isInteger(deadline) && deadline < now;
  } catch {
    return false;
  }
}

async function sshTarget(options: TargetOptions): Promise<Target> {
  const server = await startSshd();
  try {
    const account = server.accounts.unprivileged;
    const records = join(server.dir, 'records');
    mkdirSync(records, { mode: 0o700 });
    chownSync(records, account.uid, account.uid);
    const connection = {
      host: server.host,
      port: server.port,
      username: account.username,
      privateKeyPath: server.clientKeyPath,
      knownHostsPath: server.knownHostsPath,
      recordBase: join(records, '.sandstream-'),
    } satisfies SshSandboxOptions;
    const open = (): Promise<Sandbox> =>
      createSshSandbox({ ...connection, graceMs: options.graceMs, killWaitMs: options.killWaitMs, env: { [MARKER]: options.runId } });
    const shared = await open();
    // The shared handle's owner lease (ADR-0049) is its own, not a command's, and lives until its
    // close: made by one command before the listing, it is part of the baseline.
    await shared.run(['true']);
    const places = [records, account.home];
    const entries = (): string[] => places.flatMap((place) => readdirSync(place).map((entry) => join(place, entry)));
    const before = new Set(entries());
    return {
      adapter: 'ssh',
      shared,
      openSandbox: open,
      owner: { kind: 'ssh', ...connection },
      backendSurvivors: async () => [],
      leftovers: async () => entries().filter((entry) => !before.has(entry) && !lapsedLease(entry)),
      async close() {
        try {
          await shared.close();
        } finally {
          keepLog();
          await server.stop();
        }
      },
    };
  } catch (error) {
    keepLog();
    await server.stop();
    throw error;
  }

  /** sshd's log goes with its directory; `SANDSTREAM_SOAK_SSHD_LOG` names a file to keep it in, for a violation's diagnosis. */
  function keepLog(): void {
    const keep = process.env['SANDSTREAM_SOAK_SSHD_LOG'];
    if (keep !== undefined && keep !== '') copyFileSync(server.logPath, keep);
  }
}

/**
 * Prints `<pid> <argv words>` (one line each: a supervisor's argv holds newlines) of each live
 * process whose environment has `$1` (`NAME=value`);
 * a zombie's environment reads empty, so zombies count as gone.
 */
const MARKED_SCAN = 'for f in $(grep -lzx -e "$1" /proc/[0-9]*/environ 2>/dev/null); do p=${f#/proc/}; p=${p%%/*}; printf "%s " "$p"; tr "\\0\\n" "  " < "/proc/$p/cmdline"; echo; done';

/** The child process of `emulator-host.ts` and its request/answer protocol. */
class EmulatorHost {
  private next = 0;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private readonly exited: Promise<void>;

  private constructor(private readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.on('message', (message: { id: number; ok: boolean; value?: unknown; error?: string }) => {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.ok) waiter?.resolve(message.value);
      else waiter?.reject(new Error(`emulator host: ${message.error}`));
    });
    child.once('exit', (code, signal) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`emulator host exited (${code ?? signal})`));
      this.pending.clear();
    });
  }

  static async start(): Promise<EmulatorHost> {
    const child = fork(hostScript(), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', reject);
    });
    return new EmulatorHost(child);
  }

  request(
    message: { op: 'start'; kind: 'e2b' | 'vercel' } | { op: 'survivors' } | { op: 'loop'; action: 'start' | 'stop' } | { op: 'close' },
  ): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ ...message, id });
    });
  }

  /** Stops the emulator (killing what it still runs) and waits for the child to exit. */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null && this.child.connected) {
      await this.request({ op: 'close' }).catch(() => undefined);
      this.child.disconnect();
    }
    await this.exited;
  }
}

/** The compiled host script: beside this module in `dist`, or in `dist` when this module runs from `src` (under Vitest). */
function hostScript(): string {
  const here = import.meta.url;
  const url = here.endsWith('.ts') ? new URL('../dist/emulator-host.js', here) : new URL('./emulator-host.js', here);
  return fileURLToPath(url);
}

/** The places an adapter would keep files for its commands, as paths of their entries. */
const SCRATCH = ['/tmp', '/var/tmp', '/run', '/dev/shm', '/'];

/** Every entry of the scratch places in a sandbox, listed by a command of its own. */
async function scratchEntries(sandbox: Sandbox): Promise<string[]> {
  const script = 'for d; do [ -d "$d" ] && for e in "$d"/.* "$d"/*; do [ -e "$e" ] || [ -L "$e" ] && printf "%s\\n" "$e"; done; done; exit 0';
  const result = await sandbox.run(['sh', '-c', script, 'sh', ...SCRATCH]);
  if (result.exitCode !== 0) throw new Error(`listing the sandbox's scratch places failed with ${result.exitCode}: ${result.stderrText}`);
  return result.stdoutText.split('\n').filter((line) => line !== '' && !/\/\.\.?$/.test(line));
}
