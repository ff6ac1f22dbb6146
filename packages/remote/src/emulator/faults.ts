/**
 * The one fault vocabulary of Sandstream's emulators, and the queue that
 * hands each fault to the request it strikes. A fault says which requests it
 * matches ({@link FaultTarget}), when among them it strikes
 * ({@link FaultWhen}) and what happens ({@link FaultAction}); every emulator
 * reads the same words, so a fault matrix written for one backend reads the
 * same for the next.
 */
import type { RecordedRequest } from './recorder.js';

/**
 * Where in a streamed answer a fault strikes: after this many frames were
 * sent (envd's events, keepalives included; the Vercel API's NDJSON
 * records), `'before-end'` where the final frame would go, or `{ bytes }`
 * once that many bytes of the body were sent (in the middle of the frame
 * that crosses the point).
 */
export type StreamPoint = number | 'before-end' | { readonly bytes: number };

/** Which requests a fault applies to: every field given must match. */
export interface FaultTarget<Route extends string = string> {
  /** The emulator's name of the endpoint or RPC (`'Start'`, `'logs'`, ...); one or several. */
  readonly route?: Route | readonly Route[];
  /** The HTTP method. */
  readonly method?: string;
  /** Tested against the request's path (without query). */
  readonly path?: RegExp;
  /** A further test on the request as recorded (its body, headers), e.g. the start of one command. */
  readonly match?: (request: RecordedRequest<Route>) => boolean;
}

/** When, among the requests it matches, a fault strikes. */
export interface FaultWhen {
  /** The nth matching request is the first one struck (1-based; default 1): `nth: 3` lets two pass. */
  readonly nth?: number;
  /** How many matching requests are struck, one after another (default 1). */
  readonly times?: number;
  /**
   * Once it first strikes, every matching request is struck for this long
   * (an outage, a rate limiter's window); `times` is then ignored.
   */
  readonly forMs?: number;
}

/**
 * What happens to a struck request. Each is one way a network, a proxy or
 * the service fails:
 * - `reset`: the TCP connection is destroyed. With `served: true` the
 *   request took effect first (a command started, stdin written) and the
 *   answer is lost; default `false`, before the service saw it. In a
 *   streamed answer, `at` says where (the request took effect).
 * - `http-status`: an HTTP `status` in place of the answer, before any
 *   response header, as a gateway or a rate limiter sends (500, 502, 503,
 *   429 with `Retry-After: retryAfterSeconds`). `body: 'service'` (default)
 *   is the service's own error shape, `'text'` a bare text one, as a proxy
 *   sends. `served: true`: the request took effect, and the status hides it.
 * - `error`: the service itself answers an error of its vocabulary (`code`:
 *   a Connect code name such as `'unavailable'` for envd, an API error code
 *   for Vercel). Without `at`, before the request takes effect; with `at`,
 *   in band at that point of a streamed answer (Connect's end-of-stream
 *   error, Vercel's error log record).
 * - `delay`: the request is held `ms` before the service handles it.
 * - `slow-headers`: the request takes effect at once; the answer's headers
 *   are held `ms` (a streamed answer sends nothing meanwhile, keepalives
 *   included).
 * - `truncate`: the answer stops short and the connection closes: in a
 *   streamed answer at `at` (default 0), half of that frame is sent (none
 *   with `boundary: true`: the body ends cleanly between two frames, as
 *   through a proxy that closed an overlong response); `close: 'end'` ends
 *   the response as if complete, `'reset'` (default) destroys the
 *   connection. A unary answer's body stops short of its length.
 * - `stall`: a streamed answer sends nothing more after `at`, and stays open.
 */
export type FaultAction =
  | { readonly kind: 'reset'; readonly served?: boolean; readonly at?: StreamPoint }
  | {
      readonly kind: 'http-status';
      readonly status: number;
      readonly retryAfterSeconds?: number;
      readonly body?: 'service' | 'text';
      readonly served?: boolean;
    }
  | { readonly kind: 'error'; readonly code: string; readonly message?: string; readonly at?: StreamPoint }
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'slow-headers'; readonly ms: number }
  | { readonly kind: 'truncate'; readonly at?: StreamPoint; readonly boundary?: boolean; readonly close?: 'reset' | 'end' }
  | { readonly kind: 'stall'; readonly at: StreamPoint };

/** One fault: a target, when it strikes and what it does. */
export type Fault<Route extends string = string> = FaultTarget<Route> & FaultWhen & FaultAction;

/** The kinds of the vocabulary. */
export type FaultKind = FaultAction['kind'];

/** The fault of kind `K`. */
export type FaultOf<K extends FaultKind, Route extends string = string> = Fault<Route> & Extract<FaultAction, { kind: K }>;

/** A bad fault: a clear message instead of a fault that never strikes. */
export class FaultError extends TypeError {
  override readonly name = 'FaultError';
}

interface Entry<Route extends string> {
  readonly fault: Fault<Route>;
  /** Matching requests seen so far (each counted once, however many times it is asked about). */
  readonly seen: WeakSet<RecordedRequest<Route>>;
  matched: number;
  struck: number;
  until: number | undefined;
}

const KINDS: ReadonlySet<string> = new Set<FaultKind>(['reset', 'http-status', 'error', 'delay', 'slow-headers', 'truncate', 'stall']);

function check(fault: FaultWhen & FaultAction): void {
  if (!KINDS.has(fault.kind)) throw new FaultError(`unknown fault kind '${String(fault.kind)}'; one of ${[...KINDS].join(', ')}`);
  const whole = (name: string, value: number | undefined, least: number): void => {
    if (value !== undefined && (!Number.isInteger(value) || value < least)) throw new FaultError(`fault ${name} must be an integer >= ${least}, got ${value}`);
  };
  whole('nth', fault.nth, 1);
  whole('times', fault.times, 1);
  if (fault.forMs !== undefined && !(fault.forMs > 0)) throw new FaultError(`fault forMs must be > 0, got ${fault.forMs}`);
  if ((fault.kind === 'delay' || fault.kind === 'slow-headers') && !(fault.ms >= 0)) throw new FaultError(`fault ms must be >= 0, got ${fault.ms}`);
  if (fault.kind === 'http-status' && !(Number.isInteger(fault.status) && fault.status >= 400 && fault.status <= 599)) {
    throw new FaultError(`fault status must be an HTTP error status (400-599), got ${fault.status}`);
  }
}

function routeMatches<Route extends string>(wanted: Route | readonly Route[] | undefined, route: Route | undefined): boolean {
  if (wanted === undefined) return true;
  if (route === undefined) return false;
  return typeof wanted === 'string' ? wanted === route : wanted.includes(route);
}

/** True when `fault` targets `request`. */
export function targets<Route extends string>(fault: FaultTarget<Route>, request: RecordedRequest<Route>): boolean {
  return (
    routeMatches(fault.route, request.route) &&
    (fault.method === undefined || fault.method === request.method) &&
    (fault.path === undefined || fault.path.test(request.path)) &&
    (fault.match === undefined || fault.match(request))
  );
}

/**
 * The faults injected into one emulator, in injection order. An emulator
 * asks, at each point of a request where a kind can strike, for the first
 * fault of those kinds that targets the request and is due; the queue
 * counts each request once per fault, so asking twice about one request
 * (before and after it took effect, say) never counts it twice.
 */
export class FaultQueue<Route extends string = string> {
  private readonly entries: Array<Entry<Route>> = [];

  constructor(private readonly now: () => number = Date.now) {}

  /** Queues `fault`; throws {@link FaultError} for one that could never strike as written. */
  inject(fault: Fault<Route>): void {
    check(fault);
    this.entries.push({ fault, seen: new WeakSet(), matched: 0, struck: 0, until: undefined });
  }

  /** Faults that have not struck yet, in injection order. */
  pending(): Array<Fault<Route>> {
    return this.entries.filter((entry) => entry.struck === 0).map((entry) => entry.fault);
  }

  /** Removes every fault. */
  clear(): void {
    this.entries.length = 0;
  }

  /**
   * The fault of one of `kinds` that strikes `request` now, if any, counted
   * as struck; `accept` narrows the candidates (a `served` flag, a route
   * that only some of a kind's forms apply to) before they are counted.
   */
  take<K extends FaultKind>(
    request: RecordedRequest<Route>,
    kinds: readonly K[],
    accept: (fault: FaultOf<K, Route>) => boolean = () => true,
  ): FaultOf<K, Route> | undefined {
    for (let index = 0; index < this.entries.length; index++) {
      const entry = this.entries[index]!;
      const fault = entry.fault as FaultOf<K, Route>;
      if (!(kinds as readonly string[]).includes(fault.kind) || !targets(fault, request) || !accept(fault)) continue;
      if (!entry.seen.has(request)) {
        entry.seen.add(request);
        entry.matched++;
      }
      if (entry.matched < (fault.nth ?? 1)) continue;
      if (fault.forMs !== undefined) {
        const now = this.now();
        entry.until ??= now + fault.forMs;
        if (now >= entry.until) {
          // The window is over: this request passes, and so will the next ones.
          this.entries.splice(index--, 1);
          continue;
        }
        entry.struck++;
        return fault;
      }
      entry.struck++;
      if (entry.struck >= (fault.times ?? 1)) this.entries.splice(index, 1);
      return fault;
    }
    return undefined;
  }
}

/** True when stream point `point` is reached before the next frame goes out (`sent` frames and `sentBytes` bytes so far). */
export function reached(point: StreamPoint, sent: number, sentBytes: number, nextIsFinal: boolean, nextBytes = 0): boolean {
  if (point === 'before-end') return nextIsFinal;
  if (typeof point === 'number') return sent === point;
  return sentBytes + nextBytes > point.bytes;
}
