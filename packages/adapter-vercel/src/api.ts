import type { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';

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
  getLogs(params: { sessionId: string; cmdId: string; signal?: AbortSignal }): AsyncIterable<LogLine> & {
    close(): void;
  };
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
    const response = await this.client.request(this.path(suffix), {
      method: 'POST',
      body: JSON.stringify(body),
      retry: { retries: 0 },
      ...(signal === undefined ? {} : { signal }),
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : (JSON.parse(text) as unknown);
    } catch {
      json = undefined;
    }
    return { status: response.status, json, text };
  }

  /** Starts a detached command: exactly one request, whatever its answer. */
  start(body: StartBody, signal?: AbortSignal): Promise<Answer> {
    return this.once('/cmd', body, signal);
  }

  /** The log stream of a command, replayed from its start. */
  logs(cmdId: string, signal?: AbortSignal): AsyncIterable<LogLine> & { close(): void } {
    return this.client.getLogs({ sessionId: this.sessionId, cmdId, ...(signal === undefined ? {} : { signal }) });
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
