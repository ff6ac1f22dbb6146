/**
 * The public face of the envd emulator: its options, what it records, the
 * faults it takes (the emulator kit's vocabulary, with envd's routes) and
 * the running emulator.
 */
import type { Fault, RecordedRequest as KitRecordedRequest, TaggedProcess } from '@sandstream/remote/emulator';
import type { EndFields } from '../status.js';

/** Options of `startEnvdEmulator`. */
export interface EnvdEmulatorOptions {
  /**
   * Interval of keepalive events on idle streams. Default: the client's
   * `Keepalive-Ping-Interval` header (whole seconds, as envd reads it; a
   * zero or negative one fails the stream), else envd's default, 90 s.
   */
  readonly keepaliveMs?: number;
  /**
   * Working directory of commands that name none (envd's configured default).
   * Default: the home of the account the command runs as (the emulator's
   * own home when the request names none).
   */
  readonly cwd?: string;
  /** Variables every command gets besides PATH, HOME, USER and LOGNAME (envd's global environment). */
  readonly env?: Readonly<Record<string, string>>;
  /** When set, requests must carry it in `X-Access-Token` (envd's secured mode). */
  readonly accessToken?: string;
  /** Delay before each request is handled, in ms (default 0): a round trip to a remote sandbox, for benches. */
  readonly latencyMs?: number;
  /** Keep every request in {@link EnvdEmulator.requests} (default true); counts are kept either way. */
  readonly recordRequests?: boolean;
  /**
   * Also serve a fake control plane on the same port, for the SDK's
   * non-debug path (`apiUrl` and `sandboxUrl` both pointing here):
   * `POST /v2/sandboxes` creates a sandbox and issues its envd access
   * token (required from then on in `X-Access-Token`), `DELETE
   * /sandboxes/{id}` kills it (its commands first; later requests for it
   * fail as for a dead sandbox). `apiKey`, when set, must be sent as
   * `X-API-KEY`.
   */
  readonly controlPlane?: { readonly apiKey?: string };
}

/** A sandbox of the fake control plane. */
export interface EmulatedSandbox {
  readonly sandboxId: string;
  readonly accessToken: string;
  readonly createdAt: number;
  readonly killedAt: number | undefined;
}

/** One command the emulator started, running or ended. */
export interface EmulatedProcess {
  readonly pid: number;
  readonly config: { readonly cmd: string; readonly args: readonly string[]; readonly envs: Readonly<Record<string, string>>; readonly cwd: string | undefined };
  readonly tag: string | undefined;
  /** A stdin pipe was kept (never for a command on a terminal). */
  readonly stdin: boolean;
  /** For a command started with `pty`: its terminal's size, the last one set (by Start or Update). */
  readonly pty: { readonly cols: number; readonly rows: number } | undefined;
  readonly startedAt: number;
  /** Set once the end event was produced (the leader reaped and both pipes, or the terminal, at end of file, or closed by a kill). */
  readonly end: EndFields | undefined;
  readonly endedAt: number | undefined;
  /** Signals delivered through SendSignal, in order. */
  readonly signals: readonly string[];
  /** The `E2b-Sandbox-Id` the Start request carried. */
  readonly sandboxId: string | undefined;
  /** The account named in the Start request's Basic auth, if any. */
  readonly user: string | undefined;
}

/** RPC methods of the process service. */
export type EnvdMethod = 'Start' | 'Connect' | 'List' | 'SendInput' | 'SendSignal' | 'CloseStdin' | 'Update' | 'StreamInput';

/** What the emulator calls each request it serves: an RPC, the health check, or a control-plane call. */
export type EnvdRoute = EnvdMethod | 'health' | 'create-sandbox' | 'connect-sandbox' | 'kill-sandbox';

/**
 * A request as the emulator received it: `route` is the RPC (`'Start'`),
 * `body` the request message in the protocol's JSON form.
 */
export type RecordedRequest = KitRecordedRequest<EnvdRoute>;

/**
 * A fault of the emulator kit's vocabulary (`@sandstream/remote/emulator`),
 * targeted by envd route. How envd's faults read:
 * - `error` (`code` a Connect code name, e.g. `'unavailable'`): without
 *   `at`, the RPC fails before anything happens; with `at` in a server
 *   stream, the stream ends there with that in-band error.
 * - `reset`: in a server stream at `at` (default 0: the command was
 *   started, the client never learns its pid); in a unary call before the
 *   request reached envd, or after it took effect with `served: true` (a
 *   SendInput written, its answer lost).
 * - `http-status`: a proxy's status before any response header, with a
 *   Connect error body (`body: 'service'`) or a bare one; `served: true`
 *   handles the request first (a command started), so the status hides it.
 * - `slow-headers`: the request takes effect at once, its response headers
 *   are held `ms` (a server stream sends nothing, not even keepalives).
 * - `delay`: the request is handled `ms` later.
 * - `truncate`: in a server stream, half of the event at `at` (default 0)
 *   (none of it with `boundary: true`), then the body ends without the
 *   end-of-stream message; in a unary call, the request takes effect and
 *   the answer's body stops short of its `Content-Length`.
 * - `stall`: after `at` events the stream sends nothing more, keepalives
 *   included, and stays open.
 */
export type EnvdFault = Fault<EnvdRoute>;

/** A running emulator. */
export interface EnvdEmulator {
  /** `http://127.0.0.1:<port>`: the `sandboxUrl` of the SDK, the `envdUrl` of the adapter. */
  readonly url: string;
  readonly port: number;
  /**
   * The `recordBase` for every adapter handle on this emulator: a directory of the emulator's
   * own (removed at close), since its commands share the host's `/tmp` and a real sandbox's is
   * its own. Handles on one emulator must all use it to see each other's background commands.
   */
  readonly recordBase: string;
  /** Every request so far, in arrival order (none with `recordRequests: false`). */
  readonly requests: readonly RecordedRequest[];
  /** How many requests arrived per route, kept or not. */
  requestCounts(): Record<string, number>;
  /** Delay before each request is handled, in ms; settable between phases of a bench. */
  latencyMs: number;
  /** Every command started so far, running or ended, in start order. */
  processes(): readonly EmulatedProcess[];
  /** The command with this pid, if the emulator started it. */
  process(pid: number): EmulatedProcess | undefined;
  /** Live (non-zombie) pids in process group `pgid`, read from /proc. */
  groupMembers(pgid: number): number[];
  /** Live (non-zombie) descendants of `pid` still parented to it or its descendants. */
  descendants(pid: number): number[];
  /** Live processes tagged `SANDSTREAM_COMMAND=<id>` (ADR-0033), wherever they moved in the tree. */
  tagged(id: string): TaggedProcess[];
  /** Sandboxes created through the fake control plane, killed ones included. */
  sandboxes(): readonly EmulatedSandbox[];
  /** Queues a fault (see {@link EnvdFault}). */
  inject(fault: EnvdFault): void;
  /** Faults queued that have not struck yet. */
  pendingFaults(): readonly EnvdFault[];
  /** Open client connections, for tests that cut them all. */
  dropConnections(): void;
  /** Kills everything it started (whole groups where a command leads one) and stops the server. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
