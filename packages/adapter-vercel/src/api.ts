/**
 * The adapter's view of one Vercel sandbox session, on the SDK's own API
 * client (its base URL, credentials, OIDC refresh and `fetch`), with the
 * SDK's retries off on every request: what may be sent again is decided by
 * the one retry policy of `@sandstream/remote`, and a start never is.
 */
import type { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { parseRetryAfter } from '@sandstream/remote';
import { ndjsonRecords, type ApiRecord } from './ndjson.js';

/** What the adapter uses of the SDK's internal API client (`@vercel/sandbox` 3.5.0, pinned). */
interface SdkClient {
  request(path: string, params?: { method?: string; body?: string; signal?: AbortSignal; query?: Record<string, string>; retry?: { retries: number } }): Promise<Response>;
}

/** An HTTP answer the adapter inspects itself (status and parsed body). */
export interface Answer {
  readonly status: number;
  readonly json: unknown;
  readonly text: string;
  /** The answer's `Retry-After`, in ms from now, when it has a valid one. */
  readonly retryAfterMs?: number;
}

/** A refusal of a streamed request, before its body: the HTTP status and the service's message. */
export class ApiRefusal extends Error {
  override readonly name = 'APIError';
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterMs: number | undefined,
  ) {
    super(`HTTP ${status}: ${message}`);
  }
  /** As the SDK's APIError carries it, for {@link httpStatusOf}. */
  get response(): { status: number } {
    return { status: this.status };
  }
}

/** The body of a command start. */
export interface StartBody {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly sudo: boolean;
  readonly timeout?: number;
  /** Attached: the answer streams the command's record, its logs (with `logs`) and its end. */
  readonly wait?: true;
  readonly logs?: true;
}

/** The service's message in an error answer, else the start of its text. */
export function messageOf(answer: { readonly json: unknown; readonly text: string; readonly status: number }): string {
  const json = answer.json as { error?: { message?: unknown } } | undefined;
  const message = json?.error?.message;
  return typeof message === 'string' ? message : answer.text.slice(0, 200) || `HTTP ${answer.status}`;
}

/**
 * A signal of one request that follows `signal`, and stops following it once
 * released. fetch (undici) keeps its abort listener on the signal it is given
 * until the request is garbage-collected, so requests given a command's
 * long-lived signal directly (a write to its standard input each) would pile
 * listeners on it; this way it holds one per request in flight.
 */
function linkedSignal(signal: AbortSignal | undefined): { signal?: AbortSignal; release(): void } {
  if (signal === undefined) return { release: () => undefined };
  const controller = new AbortController();
  if (signal.aborted) {
    controller.abort(signal.reason);
    return { signal: controller.signal, release: () => undefined };
  }
  const onAbort = (): void => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  return { signal: controller.signal, release: () => signal.removeEventListener('abort', onAbort) };
}

function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}

export class VercelApi {
  private constructor(
    private readonly client: SdkClient,
    readonly sessionId: string,
  ) {}

  static async of(sandbox: VercelSdkSandbox): Promise<VercelApi> {
    // The SDK builds its client lazily; its own methods call this too.
    const holder = sandbox as unknown as { ensureClient(): Promise<SdkClient> };
    const client = await holder.ensureClient();
    return new VercelApi(client, sandbox.currentSession().sessionId);
  }

  private path(suffix: string): string {
    return `/v2/sandboxes/sessions/${this.sessionId}${suffix}`;
  }

  /** One POST with a JSON answer, never retried: the caller sees the first answer or the network error. */
  async once(suffix: string, body: unknown, signal?: AbortSignal): Promise<Answer> {
    const linked = linkedSignal(signal);
    let response: Response;
    let text: string;
    try {
      response = await this.client.request(this.path(suffix), {
        method: 'POST',
        body: JSON.stringify(body),
        retry: { retries: 0 },
        ...(linked.signal === undefined ? {} : { signal: linked.signal }),
      });
      text = await response.text();
    } finally {
      linked.release();
    }
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
    return { status: response.status, json: parseJson(text), text, ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }) };
  }

  /** The command as it is now (`wait`: once it exited). One request. */
  async command(cmdId: string, wait: boolean, signal?: AbortSignal): Promise<{ exitCode: number | null }> {
    const linked = linkedSignal(signal);
    let response: Response;
    let text: string;
    try {
      response = await this.client.request(this.path(`/cmd/${cmdId}`), {
        retry: { retries: 0 },
        ...(wait ? { query: { wait: 'true' } } : {}),
        ...(linked.signal === undefined ? {} : { signal: linked.signal }),
      });
      text = await response.text();
    } finally {
      linked.release();
    }
    if (!response.ok) throw new ApiRefusal(response.status, messageOf({ status: response.status, json: parseJson(text), text }), parseRetryAfter(response.headers.get('retry-after')));
    const exitCode = (parseJson(text) as { command?: { exitCode?: unknown } } | undefined)?.command?.exitCode;
    return { exitCode: typeof exitCode === 'number' ? exitCode : null };
  }

  /**
   * A streamed answer's records: an attached start (`POST .../cmd` with
   * `wait`), or a command's log stream (`GET .../cmd/{id}/logs`, replayed
   * from the start). A refusal before the body is an {@link ApiRefusal}.
   */
  async *records(request: { start: StartBody } | { logsOf: string }, signal: AbortSignal, waitIfPaused?: () => Promise<void> | undefined): AsyncGenerator<ApiRecord> {
    const start = 'start' in request;
    const response = await this.client.request(this.path(start ? '/cmd' : `/cmd/${request.logsOf}/logs`), {
      method: start ? 'POST' : 'GET',
      ...(start ? { body: JSON.stringify(request.start) } : {}),
      retry: { retries: 0 },
      signal,
    });
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      throw new ApiRefusal(response.status, messageOf({ status: response.status, json: parseJson(text), text }), parseRetryAfter(response.headers.get('retry-after')));
    }
    if (response.headers.get('content-type') !== 'application/x-ndjson' || response.body === null) {
      throw new Error(`expected a stream of records, got HTTP ${response.status} ${response.headers.get('content-type') ?? 'without a content type'}`);
    }
    yield* ndjsonRecords(response.body, this.sessionId, waitIfPaused);
  }
}
