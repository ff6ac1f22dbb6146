/** Why no engine of the tests' own can start on this machine, or undefined. */
export declare function dockerdMissing(): string | undefined;

/** The status and body text of one Engine API request. */
export interface EngineResponse {
  readonly status: number;
  readonly body: string;
}

/** One request to the Engine API over a unix socket. */
export declare function engineRequest(
  socketPath: string,
  method: string,
  path: string,
  body?: string | Uint8Array,
  headers?: Record<string, string>,
): Promise<EngineResponse>;

/** A dockerd of the tests' own, in a temporary directory. */
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
  halt(options?: { readonly signal?: 'SIGTERM' | 'SIGKILL'; readonly graceMs?: number }): Promise<void>;
  /** Starts the halted daemon again on the same data root, exec root and socket; resolves once its API answers. */
  start(): Promise<void>;
  /** `halt(options)`, then `start()`. */
  restart(options?: { readonly signal?: 'SIGTERM' | 'SIGKILL'; readonly graceMs?: number }): Promise<void>;
  /**
   * Stops the daemon by its pid (its containers killed first), unmounts what it left, removes its directory. A
   * halted daemon with live restore is started again first: its containers still run, and only it can end them.
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts dockerd (no bridge, no iptables) with everything in a temporary
 * directory, and resolves once its API answers; `halt()` and `start()` stop
 * and start the same daemon again, for a test of a restart. Rejects with the daemon's
 * last log lines when it cannot start; check {@link dockerdMissing} first.
 *
 * @example const engine = await startDockerd(); try { await engine.importBusybox(); } finally { await engine.stop(); }
 */
export declare function startDockerd(options?: {
  startTimeoutMs?: number;
  /** `--live-restore`: containers, and the processes exec'd in them, outlive the daemon's stop. */
  liveRestore?: boolean;
}): Promise<TestEngine>;
