import { Code, ConnectError, createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { Process as ProcessService } from './gen/envd-process_pb.js';

/** Where envd listens and how to authenticate to it. */
export interface EnvdEndpoint {
  /** Base URL of envd (port 49983 of the sandbox, or the emulator's URL). */
  readonly url: string;
  /** Extra headers on every request (E2B's routing headers, `X-Access-Token`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The sandbox account commands run as (sent as HTTP Basic user, as the SDK does). Default: envd's default user. */
  readonly user?: string;
}

/** envd's way of naming the account a request acts as: HTTP Basic with the name and no password. */
export function basicAuth(user: string): string {
  return `Basic ${Buffer.from(`${user}:`).toString('base64')}`;
}

/** The process service client the driver uses. */
export type ProcessClient = Client<typeof ProcessService>;

/** A Connect client of envd's process service: binary protobuf, so output stays bytes. */
export function createProcessClient(endpoint: EnvdEndpoint): ProcessClient {
  const extra: Record<string, string> = { ...endpoint.headers };
  if (endpoint.user !== undefined) extra['Authorization'] = basicAuth(endpoint.user);
  const headers: Interceptor = (next) => (request) => {
    // A call's own header (a command's account) wins over the connection's.
    for (const [name, value] of Object.entries(extra)) if (!request.header.has(name)) request.header.set(name, value);
    return next(request);
  };
  const transport = createConnectTransport({
    baseUrl: endpoint.url,
    httpVersion: '1.1',
    useBinaryFormat: true,
    interceptors: [headers],
  });
  return createClient(ProcessService, transport);
}

/**
 * Messages of the errors the Connect client (the pinned version) makes
 * itself, with codes envd also answers with: a frame cut in the middle or
 * a stream ended without its end message ("protocol error: ...",
 * InvalidArgument), a bare HTTP status without a Connect error body ("HTTP
 * 400" is Internal, "HTTP 404" Unimplemented), a body that is not Connect
 * at all. None is envd's answer: the request may have taken effect.
 */
const CLIENT_MADE =
  /^(protocol error|HTTP \d{3}$|unsupported content type|unsupported response encoding|parse binary|unexpected end flag|invalid end stream|failed to parse EndStreamResponse)/;

/**
 * True when envd itself answered (an error it raises deliberately), as
 * opposed to a transport failure whose effect on the sandbox is unknown.
 * Codes that proxies and clients also produce (Unavailable, Unknown,
 * Canceled, DeadlineExceeded, Aborted) are never taken as envd's answer.
 */
export function isDaemonAnswer(error: unknown): error is ConnectError {
  if (!(error instanceof ConnectError)) return false;
  if (CLIENT_MADE.test(error.rawMessage)) return false;
  // The client wraps this host's own failed system calls as Internal ("connect EMFILE").
  if (systemErrorIn(error) !== undefined) return false;
  return (
    error.code === Code.NotFound ||
    error.code === Code.InvalidArgument ||
    error.code === Code.Internal ||
    error.code === Code.Unimplemented ||
    error.code === Code.FailedPrecondition ||
    error.code === Code.PermissionDenied ||
    error.code === Code.Unauthenticated
  );
}

/** The first error of this host's own system calls (it has a `syscall`: `connect EMFILE`) in the cause chain, if any. */
function systemErrorIn(error: unknown): NodeJS.ErrnoException | undefined {
  const seen = new Set<unknown>();
  for (let cause: unknown = error; cause instanceof Error && !seen.has(cause); cause = cause.cause) {
    seen.add(cause);
    if (typeof (cause as NodeJS.ErrnoException).syscall === 'string') return cause as NodeJS.ErrnoException;
  }
  return undefined;
}

/**
 * True when the request never left this host: its connection could not be
 * opened (`connect EMFILE`, say), and nothing is sent before it is.
 */
export function neverSent(error: unknown): boolean {
  return systemErrorIn(error)?.syscall === 'connect';
}

/** What ran out on this host and what to do, for the errno codes that say so. */
const EXHAUSTION: Readonly<Record<string, string>> = {
  EMFILE: 'this process has run out of file descriptors: raise its limit (`ulimit -n`) or run fewer commands at once',
  ENFILE: "the system's open file table is full: close files elsewhere or run fewer commands at once",
  ENOMEM: 'this host is out of memory: free memory or run fewer commands at once',
};

/** A short description of an error for messages. */
export function describeEnvdError(error: unknown): string {
  const hint = EXHAUSTION[systemErrorIn(error)?.code ?? ''];
  if (hint !== undefined) return `${describeOnly(error)} (${hint})`;
  return describeOnly(error);
}

function describeOnly(error: unknown): string {
  if (error instanceof ConnectError) return `[${Code[error.code] ?? error.code}] ${error.rawMessage}`;
  if (error instanceof Error) return error.message;
  return String(error);
}
