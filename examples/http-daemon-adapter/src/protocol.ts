/**
 * The daemon's wire protocol, shared by the daemon and the driver.
 *
 * `POST /commands` takes a {@link StartRequest} and answers with a stream of
 * {@link CommandEvent}s, one JSON object a line: first `started` (or
 * `spawn-failed`, and nothing else), then `output` events, then
 * `leader-exited` once the command's own process was reaped, then `exit`
 * once nothing of its process group is alive and all output was sent.
 *
 * The other endpoints address one command by the id of its `started` event:
 * - `POST /commands/:id/stdin`: the body's bytes go to standard input;
 *   204 once written, 409 when the pipe is closed.
 * - `POST /commands/:id/stdin/end`: closes standard input; 204.
 * - `POST /commands/:id/signal` with `{"signal":"SIGTERM"}`: signals the
 *   process group; 204, also when nothing is left to signal.
 * - `DELETE /commands/:id`: the daemon forgets the command; 204.
 */

// #region protocol
/** The body of `POST /commands`. */
export interface StartRequest {
  readonly argv: readonly string[];
  /** Added to the daemon's own environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Relative paths resolve against the daemon's working directory. */
  readonly cwd?: string;
  /** `'ignore'`: standard input is at end-of-file from the start. */
  readonly stdin: 'pipe' | 'ignore';
}

/** One line of the answer to `POST /commands`. */
export type CommandEvent =
  | { readonly type: 'started'; readonly id: string; readonly pid: number }
  | { readonly type: 'spawn-failed'; readonly message: string }
  | { readonly type: 'output'; readonly stream: 'stdout' | 'stderr'; readonly data: string /* base64 */ }
  | { readonly type: 'leader-exited'; readonly exitCode: number | null; readonly signal: string | null }
  | { readonly type: 'exit'; readonly exitCode: number | null; readonly signal: string | null };
// #endregion protocol
