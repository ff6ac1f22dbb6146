/**
 * What an emulator received: one record per request, with its route and
 * timing, so a test can assert what a client did and a bench can count the
 * requests a command cost.
 */

/** One request as an emulator received it. */
export interface RecordedRequest<Route extends string = string> {
  /** The HTTP method. */
  readonly method: string;
  /** The path, without the query. */
  readonly path: string;
  /** The emulator's name of the endpoint or RPC (`'Start'`, `'logs'`, ...); undefined for one it does not serve. */
  readonly route: Route | undefined;
  readonly query: Readonly<Record<string, string>>;
  /** Header names in lower case; repeated headers joined by `, `. */
  readonly headers: Readonly<Record<string, string>>;
  /** The parsed body: JSON, or an RPC message in the protocol's JSON form; undefined when there was none. */
  readonly body: unknown;
  /** When it arrived (ms since the epoch). */
  readonly at: number;
  /** The status answered: 0 while the answer is open, -1 when the connection was cut. */
  readonly status: number;
  /** When its answer ended (or was cut); undefined while it is open. */
  readonly endedAt: number | undefined;
}

/** What an emulator knows of a request when it arrives. */
export interface Arrival<Route extends string = string> {
  readonly method: string;
  readonly path: string;
  readonly route: Route | undefined;
  readonly query?: Readonly<Record<string, string>>;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

type Mutable<Route extends string> = {
  -readonly [K in keyof RecordedRequest<Route>]: RecordedRequest<Route>[K];
};

/** Options of {@link RequestRecorder}. */
export interface RecorderOptions {
  /**
   * Keep every record (default true). A long run that never reads them
   * passes false: their bodies (stdin written, say) would stay in memory
   * for good; {@link RequestRecorder.counts} still counts.
   */
  readonly keep?: boolean;
  /** Delay before each request is handled, in ms (default 0): a network round trip, for benches. */
  readonly latencyMs?: number;
}

/**
 * The request log of one emulator, and its per-request latency: every
 * request is held {@link latencyMs} before it is handled, as a round trip
 * to a remote service would hold it.
 */
export class RequestRecorder<Route extends string = string> {
  private readonly kept: Array<RecordedRequest<Route>> = [];
  private readonly perRoute = new Map<string, number>();
  private readonly keep: boolean;
  private latency: number;

  constructor(options: RecorderOptions = {}) {
    this.keep = options.keep ?? true;
    this.latency = checkedLatency(options.latencyMs ?? 0);
  }

  /** Records a request as it arrives; the record is filled in as its answer goes out. */
  record(arrival: Arrival<Route>): RecordedRequest<Route> {
    const request: RecordedRequest<Route> = {
      method: arrival.method,
      path: arrival.path,
      route: arrival.route,
      query: arrival.query ?? {},
      headers: arrival.headers ?? {},
      body: arrival.body,
      at: Date.now(),
      status: 0,
      endedAt: undefined,
    };
    const key = arrival.route ?? `${arrival.method} ${arrival.path}`;
    this.perRoute.set(key, (this.perRoute.get(key) ?? 0) + 1);
    if (this.keep) this.kept.push(request);
    return request;
  }

  /** Sets the body once it was read (a request is recorded before its body arrives). */
  setBody(request: RecordedRequest<Route>, body: unknown): void {
    (request as Mutable<Route>).body = body;
  }

  /** The answer's status (-1: the connection was cut); `ended` also stamps its end. */
  answered(request: RecordedRequest<Route>, status: number, ended = true): void {
    const mutable = request as Mutable<Route>;
    mutable.status = status;
    if (ended) mutable.endedAt ??= Date.now();
  }

  /** Stamps the end of an answer whose status was set before (a stream). */
  ended(request: RecordedRequest<Route>): void {
    (request as Mutable<Route>).endedAt ??= Date.now();
  }

  /** Every request kept so far, in arrival order (a live view). */
  get requests(): ReadonlyArray<RecordedRequest<Route>> {
    return this.kept;
  }

  /** How many requests arrived per route (requests of no route by `METHOD path`), kept or not. */
  counts(): Record<string, number> {
    return Object.fromEntries(this.perRoute);
  }

  /** How many requests arrived in all, kept or not. */
  total(): number {
    let sum = 0;
    for (const count of this.perRoute.values()) sum += count;
    return sum;
  }

  /** Forgets every record and count (between two phases of a bench). */
  reset(): void {
    this.kept.length = 0;
    this.perRoute.clear();
  }

  /** The delay before each request is handled, in ms. */
  get latencyMs(): number {
    return this.latency;
  }

  set latencyMs(ms: number) {
    this.latency = checkedLatency(ms);
  }

  /** Waits out the latency (ends early when `signal` fires). */
  async admit(signal?: AbortSignal): Promise<void> {
    if (this.latency > 0) await sleep(this.latency, signal);
  }
}

function checkedLatency(ms: number): number {
  if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`latencyMs must be a finite number >= 0, got ${ms}`);
  return ms;
}

/** Resolves after `ms`, or as soon as `signal` fires. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolveSleep) => {
    if (signal?.aborted === true) return resolveSleep();
    const timer = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolveSleep();
    }
  });
}

/** Never resolves before `signal` fires: a handler whose answer a fault took waits here for its client to go. */
export function hold(signal: AbortSignal): Promise<void> {
  return sleep(2 ** 31 - 1, signal);
}
