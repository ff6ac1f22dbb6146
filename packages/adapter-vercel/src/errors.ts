import {
  InvalidArgument,
  SandboxClosed,
  SandstreamError,
  TransportError,
} from '@sandstream/types';

/** The HTTP status of an SDK `APIError` (or anything carrying a `response`), if any. */
export function httpStatusOf(error: unknown): number | undefined {
  const response = (error as { response?: { status?: unknown } } | null)?.response;
  return typeof response?.status === 'number' ? response.status : undefined;
}

/** What ran out on this host and what to do, for the errno codes of a request that could not be made. */
const EXHAUSTION: Readonly<Record<string, string>> = {
  EMFILE: 'this process has run out of file descriptors: raise its limit (`ulimit -n`) or run fewer commands at once',
  ENFILE: "the system's open file table is full: close files elsewhere or run fewer commands at once",
  ENOMEM: 'this host is out of memory: free memory or run fewer commands at once',
};

/** The hint of the first error of exhaustion in the cause chain, if any. */
function exhaustionHint(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  for (let cause: unknown = error; cause instanceof Error && !seen.has(cause); cause = cause.cause) {
    seen.add(cause);
    const hint = EXHAUSTION[String((cause as { code?: unknown }).code)];
    if (hint !== undefined) return hint;
  }
  return undefined;
}

/** A short description of an error and its causes, for messages; for a host out of descriptors or memory, what to do. */
export function describeError(error: unknown): string {
  const hint = exhaustionHint(error);
  return hint === undefined ? describeChain(error) : `${describeChain(error)} (${hint})`;
}

function describeChain(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const status = httpStatusOf(error);
  const code = (error as { code?: unknown }).code;
  let text = `${error.name}${status === undefined ? '' : ` (HTTP ${status})`}${typeof code === 'string' ? ` [${code}]` : ''}: ${error.message}`;
  if (error.cause !== undefined && error.cause !== error) text += `; cause: ${describeChain(error.cause)}`;
  return text;
}

/** Codes of a request that never left this host: its connection could not be opened. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EMFILE', 'ENFILE', 'EADDRNOTAVAIL']);

/** True when the error says the request provably never reached the service. */
export function neverSent(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let cause: unknown = error; cause instanceof Error && !seen.has(cause); cause = cause.cause) {
    seen.add(cause);
    if (NOT_SENT.has(String((cause as { code?: unknown }).code))) return true;
  }
  return false;
}

/**
 * True for a log-stream error that reopening cannot fix: an error record
 * the service sent (`StreamError`), or an HTTP refusal (4xx other than 429).
 * Resets, truncated bodies, 5xx and 429 are drops, worth a reopen.
 */
export function isFinalStreamError(error: unknown): boolean {
  if (error instanceof Error && error.name === 'StreamError') return true;
  const status = httpStatusOf(error);
  return status !== undefined && status >= 400 && status < 500 && status !== 429;
}

/**
 * Maps an SDK or HTTP error to the spec's typed errors: a typed error stays
 * as it is; 410 (a stopped sandbox) is `SandboxClosed`; a 400 is an
 * `InvalidArgument`; everything else (network, 5xx, 429, 401/403, a
 * response the SDK could not validate) is a `TransportError` with the
 * original as its cause.
 */
export function toSandstreamError(error: unknown, what: string): SandstreamError {
  if (error instanceof SandstreamError) return error;
  const status = httpStatusOf(error);
  if (status === 410) return new SandboxClosed();
  if (status === 400) return new InvalidArgument(what, describeError(error));
  return new TransportError(`${what}: ${describeError(error)}`, { cause: error });
}
