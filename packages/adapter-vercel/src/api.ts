import type { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';

/**
 * A signal of one request that follows `signal`, and stops following it once
 * released. fetch (undici) keeps its abort listener on the signal it is given
 * until the request is garbage-collected, so requests given a command's
 * long-lived signal directly (a write to its standard input each) would pile
 * listeners on it; this way it holds one per request in flight.
 */
function linkedSignal(signal: AbortSignal): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  if (signal.aborted) {
    controller.abort(signal.reason);
    return { signal: controller.signal, release: () => undefined };
  }
  const onAbort = (): void => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  return { signal: controller.signal, release: () => signal.removeEventListener('abort', onAbort) };
}

/** A log record as the SDK yields it. */
export interface LogLine {
  readonly stream: 'stdout' | 'stderr';
  readonly data: string;
}

/** A command as the API describes it. */
export interface CommandJson {
  readonly id: string;
  readonly exitCode: number | null;
}

/** What the adapter uses of the SDK's internal API client (`@vercel/sandbox` 3.5.0, pinned). */
interface SdkClient {
  request(
    path: string,
    params?: {
      method?: string;
      body?: string;
      signal?: AbortSignal;
      retry?: { retries: number };
    },
  ): Promise<Response>;
  getCommand(params: {
    sessionId: string;
    cmdId: string;
    wait?: boolean;
    signal?: AbortSignal;
  }): Promise<{ json: { command: CommandJson } }>;
  runCommand(params: {
    sessionId: string;
    command: string;
    args: string[];
    env: Record<string, string>;
    sudo: boolean;
    wait: true;
    logs: true;
    onLog: (line: LogLine) => void;
    signal?: AbortSignal;
  }): Promise<{ command: CommandJson; finished: Promise<CommandJson> }>;
}

/** An HTTP answer the adapter inspects itself (status and parsed body). */
export interface Answer {
  readonly status: number;
  readonly json: unknown;
  readonly text: string;
  /** The answer's `Retry-After` (seconds or an HTTP date), in ms from now, when it has a valid one. */
  readonly retryAfterMs?: number;
}

/** `Retry-After` as ms from now: delta-seconds or an HTTP date (RFC 9110); undefined when absent or invalid. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The body of a command start. */
export interface StartBody {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly sudo: boolean;
  readonly timeout?: number;
}

/**
 * The adapter's view of one Vercel sandbox session, on top of the SDK's own
 * API client (its base URL, credentials, OIDC refresh and `fetch`). Reads
 * use the SDK's retries; the start of a command and standard-input writes
 * do not, because the adapter decides itself what may be resent.
 */
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

  /** One request, never retried: the caller sees the first answer or the network error. */
  async once(suffix: string, body: unknown, signal?: AbortSignal): Promise<Answer> {
    const request = signal === undefined ? undefined : linkedSignal(signal);
    let text: string;
    let response: Response;
    try {
      response = await this.client.request(this.path(suffix), {
        method: 'POST',
        body: JSON.stringify(body),
        retry: { retries: 0 },
        ...(request === undefined ? {} : { signal: request.signal }),
      });
      text = await response.text();
    } finally {
      request?.release();
    }
    let json: unknown;
    try {
      json = text === '' ? undefined : (JSON.parse(text) as unknown);
    } catch {
      json = undefined;
    }
    const retryAfter = retryAfterMs(response.headers.get('retry-after'));
    return { status: response.status, json, text, ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }) };
  }

  /** Starts a detached command: exactly one request, whatever its answer. */
  start(body: StartBody, signal?: AbortSignal): Promise<Answer> {
    return this.once('/cmd', body, signal);
  }

  /**
   * The log stream of a command, replayed from its start. Read through the
   * SDK's client (auth, retries of the GET) but split into lines here: the
   * SDK's line splitter re-scans everything buffered on each network chunk,
   * which is quadratic in the length of a line, and the service's records of
   * escaped binary-looking text are long. The records are validated as the
   * SDK's schema does; an error record throws a `StreamError`.
   */
  logs(cmdId: string, signal?: AbortSignal): AsyncIterable<LogLine> & { close(): void } {
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    if (signal?.aborted) controller.abort(signal.reason);
    else signal?.addEventListener('abort', onAbort, { once: true });
    const { client, sessionId } = this;
    const path = this.path(`/cmd/${cmdId}/logs`);
    async function* read(): AsyncGenerator<LogLine> {
      try {
        const response = await client.request(path, { method: 'GET', signal: controller.signal });
        if (!response.ok) {
          const text = await response.text().catch(() => '');
          throw Object.assign(new Error(`reading the log stream: HTTP ${response.status}: ${text.slice(0, 200)}`), {
            name: 'APIError',
            response,
          });
        }
        if (response.headers.get('content-type') !== 'application/x-ndjson' || response.body === null) {
          throw Object.assign(new Error('Expected a stream of logs'), { name: 'APIError', response });
        }
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let pending: Uint8Array[] = [];
        const parse = (bytes: Uint8Array): LogLine | undefined => {
          if (bytes.byteLength === 0) return undefined;
          const record = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as {
            stream?: unknown;
            data?: unknown;
          };
          if (record.stream === 'error') {
            const data = (record.data ?? {}) as { code?: unknown; message?: unknown };
            throw Object.assign(new Error(String(data.message ?? 'the service ended the log stream with an error')), {
              name: 'StreamError',
              code: String(data.code ?? 'unknown'),
              sessionId,
            });
          }
          if ((record.stream !== 'stdout' && record.stream !== 'stderr') || typeof record.data !== 'string') {
            throw new Error(`the log stream carried an invalid record: ${decoder.decode(bytes).slice(0, 200)}`);
          }
          return { stream: record.stream, data: record.data };
        };
        for (;;) {
          const { value: read, done } = await reader.read();
          if (done) break;
          // A Buffer view: its indexOf is a memchr, a typed array's a loop.
          const value = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
          let start = 0;
          for (let end = value.indexOf(10); end !== -1; end = value.indexOf(10, start)) {
            const piece = value.subarray(start, end);
            start = end + 1;
            const line = pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
            pending = [];
            const record = parse(line);
            if (record !== undefined) yield record;
          }
          if (start < value.byteLength) pending.push(value.subarray(start));
        }
        // A last line without its newline: whole, or a truncated body (a parse error, worth a reopen).
        const last = parse(pending.length === 0 ? new Uint8Array(0) : Buffer.concat(pending));
        if (last !== undefined) yield last;
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    }
    return Object.assign(read(), { close: () => controller.abort() });
  }

  /** The command as it is now, without waiting (the SDK retries this idempotent read). */
  async status(cmdId: string, signal?: AbortSignal): Promise<CommandJson> {
    const answer = await this.client.getCommand({ sessionId: this.sessionId, cmdId, ...(signal === undefined ? {} : { signal }) });
    return answer.json.command;
  }

  /** Waits for the command's exit (the SDK retries this idempotent read). */
  async wait(cmdId: string, signal?: AbortSignal): Promise<CommandJson> {
    const answer = await this.client.getCommand({
      sessionId: this.sessionId,
      cmdId,
      wait: true,
      ...(signal === undefined ? {} : { signal }),
    });
    return answer.json.command;
  }

  /**
   * Runs a short helper command to completion and returns its standard
   * output. Helpers are idempotent (a signal sweep, a liveness query), so
   * the SDK's retries may run them twice without harm.
   */
  async helper(argv: readonly string[], signal?: AbortSignal): Promise<{ exitCode: number | null; stdout: string }> {
    let stdout = '';
    const started = await this.client.runCommand({
      sessionId: this.sessionId,
      command: argv[0]!,
      args: argv.slice(1),
      env: {},
      sudo: false,
      wait: true,
      logs: true,
      onLog: (line) => {
        if (line.stream === 'stdout') stdout += line.data;
      },
      ...(signal === undefined ? {} : { signal }),
    });
    const finished = await started.finished;
    return { exitCode: finished.exitCode, stdout };
  }
}
