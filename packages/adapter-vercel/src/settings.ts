/**
 * What the Vercel transport and its processes share: the settings of one
 * sandbox handle, and the body of an attached start.
 */
import type { RetryPolicy, StartRequest } from '@sandstream/remote';
import type { StartBody, VercelApi } from './api.js';

/** What the transport of one sandbox handle needs. */
export interface VercelTransportSettings {
  readonly api: VercelApi;
  /** The service answered the stdin probe: every command has a stdin pipe. */
  readonly stdinService: boolean;
  /** Sent as the API's command `timeout`: a server-side backstop (undefined: none). */
  readonly commandTimeoutMs: number | undefined;
  /** Bound on a signal's request, in ms. */
  readonly requestTimeoutMs: number;
  /** Bound on the wait for a start's command record, in ms. */
  readonly startTimeoutMs: number;
  /** The policy of every repeated request: a log stream reopened, a stdin write resent. */
  readonly retry: RetryPolicy;
}

/** The body of an attached start of `argv`. */
export function startBody(argv: readonly string[], settings: VercelTransportSettings, request?: StartRequest): StartBody {
  return {
    command: argv[0] ?? '',
    args: argv.slice(1),
    ...(request?.cwd === undefined ? {} : { cwd: request.cwd }),
    env: { ...request?.env },
    sudo: false,
    ...(settings.commandTimeoutMs === undefined || request === undefined ? {} : { timeout: settings.commandTimeoutMs }),
    wait: true,
    ...(request === undefined ? {} : { logs: true }),
  };
}
