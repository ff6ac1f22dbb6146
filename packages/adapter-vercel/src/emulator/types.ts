/**
 * The public face of the Vercel Sandbox emulator: its options, what it
 * records, the faults it takes (the emulator kit's vocabulary, with the
 * API's routes) and what it reports of the commands it started.
 */
import type { Fault as KitFault, RecordedRequest as KitRecordedRequest } from '@sandstream/remote/emulator';

/** Options of `VercelEmulator.start`. */
export interface EmulatorOptions {
  /**
   * Serve the standard-input endpoint of seed 002 (`POST .../cmd/{cmdId}/stdin`),
   * which the Vercel service does not have (no call of `@vercel/sandbox`
   * reaches one): every command then gets a stdin pipe. Default false, as
   * the service: commands read end of file and the endpoint answers 404.
   */
  readonly stdin?: boolean;
  /** The sandbox's working directory (default: a fresh temporary directory, removed on close). */
  readonly cwd?: string;
  /** The base environment of commands (default: this process's). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Keep every request in `VercelEmulator.requests` (default true); counts
   * are kept either way. A long run that never reads them passes false:
   * their bodies (all the standard input written, in base64) would stay in
   * memory for good, and every spawn of a larger process costs more.
   */
  readonly recordRequests?: boolean;
  /** Delay before each request is handled, in ms (default 0): a round trip to the service, for benches. */
  readonly latencyMs?: number;
}

/** What the emulator calls each endpoint of the API it serves. */
export type VercelRoute =
  | 'create-sandbox'
  | 'get-sandbox'
  | 'get-session'
  | 'stop-session'
  | 'start-command'
  | 'get-command'
  | 'logs'
  | 'kill'
  | 'stdin';

/** One request the emulator received (`path` without the `/api` prefix or the query). */
export type RecordedRequest = KitRecordedRequest<VercelRoute>;

/**
 * A fault of the emulator kit's vocabulary (`@sandstream/remote/emulator`),
 * targeted by route, method and path. How the API's faults read:
 * - `http-status`: a gateway's or rate limiter's status in place of the
 *   answer (`body: 'service'`: the API's `{ error: { code, message } }`;
 *   `'text'`: a bare one); `served: true` serves the request first (a
 *   command started) so the client cannot know it took effect.
 * - `reset`: the connection is destroyed before the request is served, or
 *   after its answer was produced with `served: true`; in a log stream at
 *   `at`.
 * - `truncate`: without `at`, the request is served and the first half of
 *   its answer sent (with `boundary: true`, an NDJSON answer's whole records
 *   but the last, then a clean end); in a log stream at `at` (`{ bytes }`:
 *   in the middle of the record that crosses the point, or before it with
 *   `boundary: true`), then `close`.
 * - `error` (`code` an API error code): without `at`, the API answers that
 *   error; in a log stream at `at` (a record count, or `'before-end'`), an
 *   error record ends the stream (at its end when it has fewer records).
 * - `delay`: the request is held `ms` before it is served.
 * - `slow-headers`: the request is served at once; its answer's headers
 *   are held `ms`.
 * - `stall`: a log stream sends nothing more after `at`, and stays open.
 */
export type Fault = KitFault<VercelRoute>;

/** A command the service started. */
export interface StartedCommand {
  readonly id: string;
  readonly sessionId: string;
  readonly name: string;
  readonly args: readonly string[];
  /** The variables its start request named. */
  readonly env: Readonly<Record<string, string>>;
  readonly startedAt: number;
  /** Null while it runs. */
  readonly exitCode: number | null;
}
