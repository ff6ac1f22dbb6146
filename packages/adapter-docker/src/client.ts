/**
 * The link to the Docker Engine: the client (dockerode) from an explicit
 * one, a socket path, `DOCKER_HOST` or the default socket, and the reading
 * of the Engine's and the link's errors into the adapter's typed ones.
 */
import Docker from 'dockerode';
import { retry } from '@sandstream/remote';
import { ContainerGone, ContainerPaused, DockerUnreachable } from './errors.js';

/** The default socket of a Docker Engine on Linux. */
export const DEFAULT_SOCKET = '/var/run/docker.sock';

/** An error of the client: a status code and the Engine's message, or a socket's `code`. */
interface ClientError {
  readonly statusCode?: number;
  readonly code?: string;
  readonly message?: string;
  readonly json?: { readonly message?: string } | null;
}

function asClientError(error: unknown): ClientError {
  return typeof error === 'object' && error !== null ? (error as ClientError) : {};
}

/** The Engine's own message in an answer (`No such container: ...`), else the error's. */
export function engineMessage(error: unknown): string {
  const { json, message } = asClientError(error);
  return (json?.message ?? message ?? String(error)).trim();
}

/** The HTTP status of the Engine's answer, or undefined when the Engine did not answer. */
export function statusOf(error: unknown): number | undefined {
  const status = asClientError(error).statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** Socket errors that mean the request never reached a daemon: nothing of it can have run. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'EPERM', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

/** Whether `error` proves the request never reached the Engine. */
export function neverSent(error: unknown): boolean {
  const code = asClientError(error).code;
  return code !== undefined && NOT_SENT.has(code);
}

/**
 * Whether the Engine gave no answer to a request: no HTTP status, and a
 * failure of the link (a socket's `code`: gone, refused, reset) or of the
 * request's bound. Nothing is learned from it, and an idempotent request
 * may be asked again.
 */
export function unanswered(error: unknown): boolean {
  if (statusOf(error) !== undefined) return false;
  const name = error instanceof Error ? error.name : undefined;
  return typeof asClientError(error).code === 'string' || name === 'AbortError' || name === 'TimeoutError';
}

/**
 * An idempotent request, asked again while the Engine gives no answer at all
 * (dockerd restarting: its socket gone, then refusing, for seconds) and
 * while `again` says so, within `boundMs`; each try is bounded by what is
 * left. `onUnanswered` is told of every try not answered.
 */
export function untilAnswered<T>(boundMs: number, request: (abortSignal: AbortSignal) => Promise<T>, again?: (error: unknown) => boolean, onUnanswered?: () => void): Promise<T> {
  const policy = { attempts: Number.POSITIVE_INFINITY, baseMs: 5, capMs: 200, jitter: 0.5, deadlineMs: boundMs };
  return retry(policy, async ({ remainingMs }) => {
    try {
      return await request(AbortSignal.timeout(Math.ceil(Math.min(remainingMs, boundMs))));
    } catch (error) {
      if (unanswered(error)) onUnanswered?.();
      throw error;
    }
  }, { retryable: (error) => unanswered(error) || again?.(error) === true });
}

/** Whether the Engine answered that it knows no exec by that id (`No such exec instance`). */
export function noSuchExec(error: unknown): boolean {
  return statusOf(error) === 404 && /no such exec/i.test(engineMessage(error));
}

/** Where a client points, for messages. */
export function addressOf(docker: Docker): string {
  const modem = (docker as unknown as { modem?: { socketPath?: unknown; host?: unknown; port?: unknown; protocol?: unknown } }).modem;
  if (typeof modem?.socketPath === 'string') return `unix://${modem.socketPath}`;
  if (typeof modem?.host === 'string') return `${String(modem.protocol ?? 'http')}://${modem.host}${modem.port === undefined ? '' : `:${String(modem.port)}`}`;
  return 'an unknown address';
}

/** The client: `docker` as given, else one on `socketPath`, else dockerode's defaults (`DOCKER_HOST`, else the default socket). */
export function clientOf(docker: Docker | undefined, socketPath: string | undefined): Docker {
  if (docker !== undefined) return docker;
  if (socketPath !== undefined) return new Docker({ socketPath });
  const host = process.env['DOCKER_HOST'];
  return host === undefined || host === '' ? new Docker({ socketPath: DEFAULT_SOCKET }) : new Docker();
}

/**
 * The adapter's typed error for a failed request about `container`, or
 * undefined when it is none of them: the daemon out of reach, the
 * container removed, stopped or paused.
 */
export function typedError(docker: Docker, container: string, error: unknown): Error | undefined {
  if (neverSent(error)) return new DockerUnreachable(addressOf(docker), asClientError(error).code ?? 'no connection', { cause: error });
  const status = statusOf(error);
  const message = engineMessage(error);
  if (status === 404 && /no such container/i.test(message)) return new ContainerGone(container, 'removed', { cause: error });
  if (status === 409 && /is paused/i.test(message)) return new ContainerPaused(container, { cause: error });
  if (status === 409 && /is not running|is restarting/i.test(message)) return new ContainerGone(container, 'stopped', { cause: error });
  return undefined;
}

/** A short description of a client error for messages: the typed error's, else the Engine's message. */
export function describeEngineError(error: unknown): string {
  if (error instanceof Error && error.cause !== undefined && error.name !== 'Error') return error.message;
  const status = statusOf(error);
  return status === undefined ? engineMessage(error) : `${engineMessage(error)} (HTTP ${status})`;
}
