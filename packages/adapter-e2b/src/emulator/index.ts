/**
 * An emulator of E2B's in-sandbox daemon (envd) for tests: a Connect server
 * on 127.0.0.1 that speaks envd's process service over real local
 * processes. The e2b SDK (debug mode, `sandboxUrl` pointing here) and this
 * package's adapter both run against it. It records every request, exposes
 * its process table and takes injected faults, so tests can assert what a
 * client did and what teardown left behind.
 *
 * @packageDocumentation
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { homedir } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { create, toBinary, toJson, toJsonString } from '@bufbuild/protobuf';
import { Code, ConnectError, createContextKey, createContextValues, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import {
  Process as ProcessService,
  ProcessEvent_EndEventSchema,
  ProcessInfoSchema,
  Signal as WireSignal,
  StartResponseSchema,
  type ProcessConfig,
  type ProcessEvent,
  type ProcessSelector,
} from '../gen/envd-process_pb.js';
import { livePids, ownGroupMembers, processState } from './process-table.js';
import { endFields, type EndFields } from './status.js';

export { endFields, signalFromStatus, type EndFields } from './status.js';

/** Options of {@link startEnvdEmulator}. */
export interface EnvdEmulatorOptions {
  /**
   * Interval of keepalive events on idle streams. Default: the client's
   * `Keepalive-Ping-Interval` header (seconds), else 60 s.
   */
  readonly keepaliveMs?: number;
  /**
   * Working directory of commands that name none (envd's configured default).
   * Default: the home of the account the command runs as (the emulator's
   * own home when the request names none).
   */
  readonly cwd?: string;
  /** Variables every command gets besides PATH, HOME, USER and LOGNAME (envd's global environment). */
  readonly env?: Readonly<Record<string, string>>;
  /** When set, requests must carry it in `X-Access-Token` (envd's secured mode). */
  readonly accessToken?: string;
  /**
   * After the leader was reaped, how long output still flowing from the
   * pipes is forwarded before they are closed (envd closes them once the
   * leader is reaped). What is in the pipes when the window ends is taken
   * first, so nothing written before the leader's end is lost, however
   * late this emulator's loop gets to it. Default 50 ms.
   */
  readonly drainAfterExitMs?: number;
  /**
   * Also serve a fake control plane on the same port, for the SDK's
   * non-debug path (`apiUrl` and `sandboxUrl` both pointing here):
   * `POST /v2/sandboxes` creates a sandbox and issues its envd access
   * token (required from then on in `X-Access-Token`), `DELETE
   * /sandboxes/{id}` kills it (its commands first; later requests for it
   * fail as for a dead sandbox). `apiKey`, when set, must be sent as
   * `X-API-KEY`.
   */
  readonly controlPlane?: { readonly apiKey?: string };
}

/** A sandbox of the fake control plane. */
export interface EmulatedSandbox {
  readonly sandboxId: string;
  readonly accessToken: string;
  readonly createdAt: number;
  readonly killedAt: number | undefined;
}

/** One command the emulator started, running or ended. */
export interface EmulatedProcess {
  readonly pid: number;
  readonly config: { readonly cmd: string; readonly args: readonly string[]; readonly envs: Readonly<Record<string, string>>; readonly cwd: string | undefined };
  readonly tag: string | undefined;
  readonly stdin: boolean;
  readonly startedAt: number;
  /** Set once the leader was reaped and the end event was produced. */
  readonly end: EndFields | undefined;
  readonly endedAt: number | undefined;
  /** Signals delivered through SendSignal, in order. */
  readonly signals: readonly string[];
  /** The `E2b-Sandbox-Id` the Start request carried. */
  readonly sandboxId: string | undefined;
  /** The account named in the Start request's Basic auth, if any. */
  readonly user: string | undefined;
}

/** A request as the emulator received it. */
export interface RecordedRequest {
  /** `process.Process/Start`, `GET /health`, ... */
  readonly method: string;
  readonly at: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The request message in the protocol's JSON form (RPCs only). */
  readonly message: unknown;
}

/** RPC method names of the process service. */
export type EnvdMethod = 'Start' | 'Connect' | 'List' | 'SendInput' | 'SendSignal' | 'CloseStdin' | 'Update' | 'StreamInput';

/**
 * Where in a server stream a fault strikes: after this many events were
 * sent (keepalives count; 0 is before the start event, with nothing of the
 * response sent), or `'before-end'`, where the end event would be.
 */
export type StreamPoint = number | 'before-end';

/** Which requests a fault applies to; the first request that matches consumes it. */
export interface FaultTarget {
  /** The RPC (any when omitted; some kinds apply to some methods only). */
  readonly method?: EnvdMethod;
  /**
   * A further test on the request as recorded (headers and message in the
   * protocol's JSON form), e.g. to single out the Start of one command by
   * its arguments or environment.
   */
  readonly match?: (request: RecordedRequest) => boolean;
}

/**
 * A one-shot fault, consumed by the first request it matches (see
 * {@link FaultTarget}).
 * - `unavailable`: the request fails with `Unavailable` before anything happens.
 * - `delay`: the request is handled `ms` later.
 * - `drop`: the stream's TCP connection is destroyed after `afterEvents`
 *   events (the start event counts; 0 cuts it before the start event); the
 *   command keeps running, as on a real network failure.
 * - `silence`: after `afterEvents` events the stream sends nothing more,
 *   keepalives included, and stays open.
 * - `error-before-end`: the stream ends with an error where the end event
 *   would have been.
 * - `drop-after-write`: SendInput writes the bytes, then the connection is
 *   destroyed before the answer (the client cannot know they were delivered).
 *
 * Wire faults, one per way a link or a proxy in front of envd fails:
 * - `reset`: the TCP connection is destroyed. In a server stream at `at`
 *   (default 0: the command was started, the client never learns its pid);
 *   in a unary call before the answer, after the request took effect
 *   (`served`, default true) or before it reached envd (`served: false`).
 * - `http-status`: an HTTP `status` in place of the response, before any
 *   response header: what a proxy or load balancer answers (502, 503, 500,
 *   429 with `Retry-After: retryAfterSeconds`), with a Connect error body
 *   (`connectBody`, default true: `{"code":"unavailable",...}` as JSON) or a
 *   plain-text one. `served: true` handles the request first (a command
 *   started, stdin written), so the status hides an effect; default false.
 * - `stream-error`: the stream ends at `at` with an in-band Connect error
 *   (the end-of-stream message carries `code`): what a failing server or a
 *   Connect-aware proxy sends once the response headers are out, where an
 *   HTTP status can no longer be.
 * - `slow-headers`: the request takes effect at once, its response headers
 *   are held for `ms` (a server stream sends nothing, not even keepalives;
 *   a unary answer waits). The client decides whether that is too long.
 * - `truncate`: a frame cut in the middle, then the response body ends and
 *   the connection closes. In a server stream the event at `at` (default
 *   0: the start event) is sent as a Connect envelope whose first half only
 *   arrives (with `boundary: true`, none of it: the body ends cleanly
 *   between two frames, without the end-of-stream message, as through a
 *   proxy that closed an idle or overlong response); in a unary call the
 *   request takes effect and the answer's body stops short of its
 *   `Content-Length`.
 */
export type EnvdFault = FaultTarget &
  (
    | { readonly kind: 'unavailable' }
    | { readonly kind: 'delay'; readonly ms: number }
    | { readonly kind: 'drop'; readonly afterEvents: number; readonly method?: 'Start' | 'Connect' }
    | { readonly kind: 'drop-after-write'; readonly method?: 'SendInput' }
    | { readonly kind: 'silence'; readonly afterEvents: number; readonly method?: 'Start' | 'Connect' }
    | { readonly kind: 'error-before-end'; readonly code?: Code; readonly method?: 'Start' | 'Connect' }
    | { readonly kind: 'reset'; readonly at?: StreamPoint; readonly served?: boolean }
    | {
        readonly kind: 'http-status';
        readonly status: number;
        readonly retryAfterSeconds?: number;
        readonly connectBody?: boolean;
        readonly served?: boolean;
      }
    | { readonly kind: 'stream-error'; readonly code: Code; readonly at: StreamPoint; readonly method?: 'Start' | 'Connect' }
    | { readonly kind: 'slow-headers'; readonly ms: number }
    | { readonly kind: 'truncate'; readonly at?: StreamPoint; readonly boundary?: boolean }
  );

/** A running emulator. */
export interface EnvdEmulator {
  /** `http://127.0.0.1:<port>`: the `sandboxUrl` of the SDK, the `envdUrl` of the adapter. */
  readonly url: string;
  readonly port: number;
  /** Every request so far, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** Every command started so far, running or ended, in start order. */
  processes(): readonly EmulatedProcess[];
  /** The command with this pid, if the emulator started it. */
  process(pid: number): EmulatedProcess | undefined;
  /** Live (non-zombie) pids in process group `pgid`, read from /proc. */
  groupMembers(pgid: number): number[];
  /** Live (non-zombie) descendants of `pid` still parented to it or its descendants. */
  descendants(pid: number): number[];
  /** Sandboxes created through the fake control plane, killed ones included. */
  sandboxes(): readonly EmulatedSandbox[];
  /** Queues a one-shot fault. */
  inject(fault: EnvdFault): void;
  /** Faults queued and not yet consumed by a request. */
  pendingFaults(): readonly EnvdFault[];
  /** Open client connections, for tests that cut them all. */
  dropConnections(): void;
  /** Kills everything it started (whole groups where a command leads one) and stops the server. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

interface RawRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
}

/** An RPC's node request and response with the request as recorded. */
interface Call extends RawRequest {
  readonly recorded: RecordedRequest;
}

/** The real writers of a response whose Connect handler has been muted. */
interface Writers {
  writeHead(status: number, headers: Record<string, string>): void;
  write(chunk: Uint8Array, done?: () => void): void;
  end(chunk?: Uint8Array | string, done?: () => void): void;
}

/**
 * Takes a response away from the Connect handler, so a fault can write
 * what no Connect server would (a proxy's status, half a frame): whatever
 * the handler writes afterwards goes nowhere.
 */
function hijack(res: ServerResponse): Writers {
  const writeHead = res.writeHead.bind(res);
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  const callbackOf = (args: unknown[]): (() => void) | undefined => args.find((a): a is () => void => typeof a === 'function');
  res.writeHead = (() => res) as unknown as ServerResponse['writeHead'];
  res.write = ((...args: unknown[]) => {
    const done = callbackOf(args);
    if (done !== undefined) queueMicrotask(done);
    return true;
  }) as ServerResponse['write'];
  res.end = ((...args: unknown[]) => {
    const done = callbackOf(args);
    if (done !== undefined) queueMicrotask(done);
    return res;
  }) as ServerResponse['end'];
  return {
    writeHead: (status, headers) => void writeHead(status, headers),
    write: (chunk, done) => void write(chunk, () => done?.()),
    end: (chunk, done) => void (chunk === undefined ? end(() => done?.()) : end(chunk, () => done?.())),
  };
}

/** The first half of `frame` (at least one byte short of it, at least one byte of it when it has two). */
function firstHalf(frame: Uint8Array): Uint8Array {
  return frame.subarray(0, Math.min(frame.byteLength - 1, Math.max(1, Math.floor(frame.byteLength / 2))));
}

/** True when `point` is reached before sending the next event. */
function atPoint(point: StreamPoint, sent: number, next: ProcessEvent): boolean {
  return point === 'before-end' ? next.event.case === 'end' : sent === point;
}

const rawKey = createContextKey<RawRequest | undefined>(undefined, { description: 'node request' });

/** An account of this machine, from /etc/passwd. */
interface Account {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

function findAccount(name: string): Account | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const fields = line.split(':');
    if (fields[0] === name && fields.length >= 6) {
      return { name, uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5]! };
    }
  }
  return undefined;
}

/** The account a request names in HTTP Basic auth (`user:`), as the SDK and envd use it. */
function basicUser(req: IncomingMessage): string | undefined {
  const header = req.headers['authorization'];
  if (typeof header !== 'string' || !header.startsWith('Basic ')) return undefined;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? decoded : decoded.slice(0, colon);
}

/** An unbounded queue of events with one waiting reader. */
class Subscription {
  private readonly items: ProcessEvent[] = [];
  private waiter: (() => void) | undefined;
  closed = false;

  constructor(private readonly onDrained: () => void) {}

  get length(): number {
    return this.items.length;
  }

  push(event: ProcessEvent): void {
    this.items.push(event);
    this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  /** The next event, `undefined` at the end, `'timeout'` after `ms`, `'aborted'` when `signal` fires. */
  async next(ms: number, signal: AbortSignal): Promise<ProcessEvent | undefined | 'timeout' | 'aborted'> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        if (this.items.length < LOW_WATER) this.onDrained();
        return item;
      }
      if (this.closed) return undefined;
      if (signal.aborted) return 'aborted';
      const outcome = await new Promise<'wake' | 'timeout' | 'aborted'>((resolveWait) => {
        const timer = setTimeout(() => finish('timeout'), ms);
        const onAbort = (): void => finish('aborted');
        signal.addEventListener('abort', onAbort, { once: true });
        const finish = (value: 'wake' | 'timeout' | 'aborted'): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          this.waiter = undefined;
          resolveWait(value);
        };
        this.waiter = () => finish('wake');
      });
      if (outcome !== 'wake') return outcome;
    }
  }
}

/** Events queued for one subscriber at which the command's pipes are paused, as envd's bounded channels do. */
const HIGH_WATER = 64;
const LOW_WATER = 16;

class Command implements EmulatedProcess {
  readonly startedAt = Date.now();
  end: EndFields | undefined;
  endedAt: number | undefined;
  readonly signals: string[] = [];
  sandboxId: string | undefined;
  user: string | undefined;
  /** The leader's start time in clock ticks since boot, when it could be read. */
  leaderStartTicks: number | undefined;
  readonly subscribers = new Set<Subscription>();
  stdinOpen: boolean;
  private paused = false;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    readonly child: ChildProcess,
    readonly pid: number,
    readonly config: EmulatedProcess['config'],
    readonly tag: string | undefined,
    readonly stdin: boolean,
    private readonly drainAfterExitMs: number,
    private readonly onEnded: (command: Command) => void,
  ) {
    this.stdinOpen = stdin;
    child.stdin?.on('error', () => undefined);
    child.stdout!.on('data', (data: Buffer) => this.publishData('stdout', data));
    child.stderr!.on('data', (data: Buffer) => this.publishData('stderr', data));
    child.stdout!.on('error', () => undefined);
    child.stderr!.on('error', () => undefined);
    child.once('exit', (code, signal) => this.reaped(code, signal));
  }

  /** envd kills the leader when the Start request's Connect-Timeout-Ms elapses, not when the client goes away. */
  killAfter(ms: number): void {
    this.deadline = setTimeout(() => this.signal('SIGKILL'), ms);
  }

  subscribe(): Subscription {
    const subscription = new Subscription(() => this.maybeResume());
    this.subscribers.add(subscription);
    return subscription;
  }

  unsubscribe(subscription: Subscription): void {
    this.subscribers.delete(subscription);
    this.maybeResume();
  }

  signal(signal: 'SIGTERM' | 'SIGKILL'): void {
    this.signals.push(signal);
    try {
      // The leader only: its children are not told.
      process.kill(this.pid, signal);
    } catch {
      // Already reaped.
    }
  }

  private publishData(stream: 'stdout' | 'stderr', data: Buffer): void {
    const event: ProcessEvent = {
      $typeName: 'process.ProcessEvent',
      event: {
        case: 'data',
        value: { $typeName: 'process.ProcessEvent.DataEvent', output: { case: stream, value: new Uint8Array(data) } },
      },
    };
    let full = false;
    for (const subscriber of this.subscribers) {
      subscriber.push(event);
      if (subscriber.length >= HIGH_WATER) full = true;
    }
    if (full && !this.paused) {
      this.paused = true;
      this.child.stdout?.pause();
      this.child.stderr?.pause();
    }
  }

  private maybeResume(): void {
    if (!this.paused) return;
    for (const subscriber of this.subscribers) if (subscriber.length >= LOW_WATER) return;
    this.paused = false;
    this.child.stdout?.resume();
    this.child.stderr?.resume();
  }

  /**
   * Publishes what is left of a pipe before it is closed: what Node.js has
   * read but not yet emitted, then what is still in the pipe itself. envd
   * reads its pipes on threads of their own, so what a command wrote before
   * its end always reaches the client. This loop, busy with other commands,
   * could reach the end of the drain window before it had read the pipe
   * again, and closing it then dropped the command's last output (the soak:
   * stdout short by 219 061 bytes and stderr empty, with the right status).
   */
  private takeRest(pipe: Readable | null, stream: 'stdout' | 'stderr'): void {
    if (pipe === null || pipe.destroyed) return;
    // read() emits 'data' for what it returns, which publishes it.
    while (pipe.read() !== null);
    // The descriptor of Node.js's pipe handle: non-blocking, so an empty pipe answers EAGAIN.
    const fd = (pipe as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) return;
    const buffer = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      let length: number;
      try {
        length = readSync(fd, buffer, 0, buffer.length, null);
      } catch {
        return;
      }
      if (length <= 0) return;
      this.publishData(stream, Buffer.from(buffer.subarray(0, length)));
    }
  }

  private reaped(code: number | null, signal: NodeJS.Signals | null): void {
    clearTimeout(this.deadline);
    this.stdinOpen = false;
    const fields = endFields(code, signal);
    // envd closes the pipes once the leader is reaped; whatever a surviving
    // child writes later is lost to it. Forward what is still flowing for a
    // short while, then close.
    const { stdout, stderr } = this.child;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      this.takeRest(stdout, 'stdout');
      this.takeRest(stderr, 'stderr');
      stdout?.destroy();
      stderr?.destroy();
      this.child.stdin?.destroy();
      this.maybeResume();
      this.end = fields;
      this.endedAt = Date.now();
      const event: ProcessEvent = {
        $typeName: 'process.ProcessEvent',
        event: {
          case: 'end',
          value: create(ProcessEvent_EndEventSchema, {
            exitCode: fields.exitCode,
            exited: fields.exited,
            status: fields.status,
            ...(fields.error === undefined ? {} : { error: fields.error }),
          }),
        },
      };
      for (const subscriber of this.subscribers) {
        subscriber.push(event);
        subscriber.close();
      }
      this.onEnded(this);
    };
    let ended = 0;
    const onEnd = (): void => {
      if (++ended === 2) finish();
    };
    const timer = setTimeout(finish, this.drainAfterExitMs);
    if (this.paused) {
      this.paused = false;
      stdout?.resume();
      stderr?.resume();
    }
    for (const pipe of [stdout, stderr]) {
      if (pipe === null || pipe.readableEnded || pipe.destroyed) onEnd();
      else pipe.once('close', onEnd);
    }
  }
}

function headerRecord(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolveSleep) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolveSleep();
    }
  });
}

/**
 * Starts an envd emulator on 127.0.0.1 with a random port.
 *
 * @example
 * ```ts
 * import { Sandbox } from 'e2b';
 * import { startEnvdEmulator } from '@sandstream/adapter-e2b/emulator';
 * await using envd = await startEnvdEmulator();
 * const sandbox = await Sandbox.create({ debug: true, sandboxUrl: envd.url });
 * const result = await sandbox.commands.run('echo hello');
 * ```
 */
export async function startEnvdEmulator(options: EnvdEmulatorOptions = {}): Promise<EnvdEmulator> {
  const requests: RecordedRequest[] = [];
  const table: Command[] = [];
  const running = new Map<number, Command>();
  const faults: EnvdFault[] = [];
  const sandboxes = new Map<string, { sandboxId: string; accessToken: string; createdAt: number; killedAt: number | undefined }>();
  let sandboxCounter = 0;

  /** The control-plane sandbox a request addresses, if the fake control plane made it. */
  function sandboxOf(req: IncomingMessage): { sandboxId: string; accessToken: string; killedAt: number | undefined } | undefined {
    const id = req.headers['e2b-sandbox-id'];
    return typeof id === 'string' ? sandboxes.get(id) : undefined;
  }
  const sockets = new Set<Socket>();
  const drainAfterExitMs = options.drainAfterExitMs ?? 50;

  function takeFault<K extends EnvdFault['kind']>(
    method: EnvdMethod,
    kinds: readonly K[],
    recorded?: RecordedRequest,
    accept: (fault: Extract<EnvdFault, { kind: K }>) => boolean = () => true,
  ): Extract<EnvdFault, { kind: K }> | undefined {
    const index = faults.findIndex(
      (fault) =>
        (kinds as readonly string[]).includes(fault.kind) &&
        (fault.method === undefined || fault.method === method) &&
        (fault.match === undefined || (recorded !== undefined && fault.match(recorded))) &&
        accept(fault as Extract<EnvdFault, { kind: K }>),
    );
    if (index < 0) return undefined;
    return faults.splice(index, 1)[0] as Extract<EnvdFault, { kind: K }>;
  }

  /** Answers an HTTP status in place of the response, as a proxy would, and closes the connection. */
  function answerStatus(call: Call, fault: Extract<EnvdFault, { kind: 'http-status' }>): void {
    const writers = hijack(call.res);
    const connect = fault.connectBody ?? true;
    const headers: Record<string, string> = {
      'content-type': connect ? 'application/json' : 'text/plain; charset=utf-8',
      connection: 'close',
    };
    if (fault.retryAfterSeconds !== undefined) headers['retry-after'] = String(fault.retryAfterSeconds);
    const code = fault.status === 429 || fault.status >= 502 ? 'unavailable' : 'unknown';
    const body = connect
      ? JSON.stringify({ code, message: `injected HTTP ${fault.status}` })
      : `injected HTTP ${fault.status}\n`;
    writers.writeHead(fault.status, headers);
    writers.end(body);
  }

  /** Never settles until the client goes away (a handler whose answer a fault took). */
  async function hold(ctx: HandlerContext): Promise<void> {
    await sleep(2 ** 31 - 1, ctx.signal);
  }

  async function enter(method: EnvdMethod, message: unknown, ctx: HandlerContext): Promise<Call> {
    const raw = ctx.values.get(rawKey)!;
    const recorded: RecordedRequest = { method: `process.Process/${method}`, at: Date.now(), headers: headerRecord(raw.req), message };
    requests.push(recorded);
    const call: Call = { ...raw, recorded };
    // A proxy in front of envd fails before envd sees anything.
    const refused = takeFault(method, ['http-status'], recorded, (fault) => fault.served !== true);
    if (refused !== undefined) {
      answerStatus(call, refused);
      await hold(ctx);
      throw new ConnectError('answered by an injected HTTP status', Code.Aborted);
    }
    const lost = takeFault(method, ['reset'], recorded, (fault) => fault.served === false && (method !== 'Start' && method !== 'Connect'));
    if (lost !== undefined) {
      raw.req.socket.destroy();
      await hold(ctx);
      throw new ConnectError('connection reset (injected)', Code.Aborted);
    }
    if (options.accessToken !== undefined && raw.req.headers['x-access-token'] !== options.accessToken) {
      throw new ConnectError('invalid access token', Code.Unauthenticated);
    }
    const username = basicUser(raw.req);
    if (username !== undefined && findAccount(username) === undefined) {
      throw new ConnectError(`invalid username: '${username}'`, Code.Unauthenticated);
    }
    const target = sandboxOf(raw.req);
    if (target !== undefined) {
      // The proxy in front of a dead sandbox answers 502, which Connect reads as Unavailable.
      if (target.killedAt !== undefined) throw new ConnectError(`sandbox ${target.sandboxId} is not running`, Code.Unavailable);
      if (raw.req.headers['x-access-token'] !== target.accessToken) throw new ConnectError('invalid access token', Code.Unauthenticated);
    }
    const delay = takeFault(method, ['delay'], recorded);
    if (delay !== undefined) await sleep(delay.ms, ctx.signal);
    if (takeFault(method, ['unavailable'], recorded) !== undefined) {
      throw new ConnectError('the sandbox is not available (injected)', Code.Unavailable);
    }
    return call;
  }

  /**
   * After a unary request took effect: the wire faults that hit its answer.
   * Returns once the answer may be sent (slow headers), or never sends it.
   */
  async function unaryAnswer(method: EnvdMethod, call: Call, ctx: HandlerContext): Promise<void> {
    const { recorded } = call;
    const status = takeFault(method, ['http-status'], recorded, (fault) => fault.served === true);
    if (status !== undefined) {
      answerStatus(call, status);
      return hold(ctx);
    }
    if (takeFault(method, ['reset'], recorded, (fault) => fault.served !== false) !== undefined) {
      call.req.socket.destroy();
      return hold(ctx);
    }
    if (takeFault(method, ['truncate'], recorded) !== undefined) {
      // A binary Connect unary answer is the bare message; these are empty
      // or short, so the promise of a longer body is what gets cut.
      const writers = hijack(call.res);
      const contentType = String(call.req.headers['content-type'] ?? 'application/proto');
      writers.writeHead(200, { 'content-type': contentType, 'content-length': '16', connection: 'close' });
      writers.write(new Uint8Array(8), () => call.req.socket.end());
      return hold(ctx);
    }
    const slow = takeFault(method, ['slow-headers'], recorded);
    if (slow !== undefined) await sleep(slow.ms, ctx.signal);
  }

  function find(selector: ProcessSelector | undefined): Command {
    const sel = selector?.selector;
    if (sel?.case === 'pid') {
      const command = running.get(sel.value);
      if (command === undefined) throw new ConnectError(`process with pid ${sel.value} not found`, Code.NotFound);
      return command;
    }
    if (sel?.case === 'tag') {
      for (const command of running.values()) if (command.tag === sel.value) return command;
      throw new ConnectError(`process with tag ${sel.value} not found`, Code.NotFound);
    }
    throw new ConnectError('invalid selector', Code.Unimplemented);
  }

  function keepaliveMs(raw: RawRequest): number {
    if (options.keepaliveMs !== undefined) return options.keepaliveMs;
    const header = Number(raw.req.headers['keepalive-ping-interval']);
    return Number.isFinite(header) && header > 0 ? header * 1000 : 60_000;
  }

  /** `event` as the Connect envelope the client would read, in the request's encoding. */
  function envelope(call: Call, event: ProcessEvent): Uint8Array {
    const message = create(StartResponseSchema, { event });
    const json = String(call.req.headers['content-type'] ?? '').includes('json');
    const payload = json ? new TextEncoder().encode(toJsonString(StartResponseSchema, message)) : toBinary(StartResponseSchema, message);
    const frame = new Uint8Array(5 + payload.byteLength);
    new DataView(frame.buffer).setUint32(1, payload.byteLength);
    frame.set(payload, 5);
    return frame;
  }

  /** Sends half of `event`'s frame (none with `boundary`), ends the response and closes the connection. */
  function truncateAt(call: Call, event: ProcessEvent, boundary: boolean): void {
    const headersSent = call.res.headersSent;
    const writers = hijack(call.res);
    if (!headersSent) {
      writers.writeHead(200, { 'content-type': String(call.req.headers['content-type'] ?? 'application/connect+proto'), connection: 'close' });
    }
    if (!boundary) writers.write(firstHalf(envelope(call, event)));
    writers.end(undefined, () => call.req.socket.end());
  }

  /** Streams a command's events to one client, with keepalives and faults. */
  async function* follow(
    method: 'Start' | 'Connect',
    command: Command,
    subscription: Subscription,
    call: Call,
    ctx: HandlerContext,
  ): AsyncGenerator<{ event: ProcessEvent }> {
    const raw = call;
    const drop = takeFault(method, ['drop'], call.recorded);
    const silence = takeFault(method, ['silence'], call.recorded);
    const errorBeforeEnd = takeFault(method, ['error-before-end'], call.recorded);
    const reset = takeFault(method, ['reset'], call.recorded);
    const streamError = takeFault(method, ['stream-error'], call.recorded);
    const truncate = takeFault(method, ['truncate'], call.recorded);
    const interval = keepaliveMs(raw);
    let sent = 0;
    const counted = (): boolean => {
      sent++;
      if (drop !== undefined && sent >= drop.afterEvents) {
        raw.req.socket.destroy();
        return true;
      }
      return silence !== undefined && sent >= silence.afterEvents;
    };
    /** The wire faults due before `next` goes out; true when the stream is over. */
    const strike = (next: ProcessEvent): boolean => {
      if (reset !== undefined && atPoint(reset.at ?? 0, sent, next)) {
        raw.req.socket.destroy();
        return true;
      }
      if (streamError !== undefined && atPoint(streamError.at, sent, next)) {
        throw new ConnectError('the stream failed (injected)', streamError.code);
      }
      if (truncate !== undefined && atPoint(truncate.at ?? 0, sent, next)) {
        truncateAt(call, next, truncate.boundary === true);
        return true;
      }
      return false;
    };
    try {
      if (drop !== undefined && drop.afterEvents <= 0) {
        // The command runs, but the client never learns it started.
        raw.req.socket.destroy();
        return;
      }
      const startEvent: ProcessEvent = {
        $typeName: 'process.ProcessEvent',
        event: { case: 'start', value: { $typeName: 'process.ProcessEvent.StartEvent', pid: command.pid } },
      };
      if (strike(startEvent)) return;
      yield { event: startEvent };
      if (counted()) {
        if (silence !== undefined) await sleep(2 ** 31 - 1, ctx.signal);
        return;
      }
      for (;;) {
        const next = await subscription.next(interval, ctx.signal);
        if (next === 'aborted' || next === undefined) return;
        const event: ProcessEvent =
          next === 'timeout'
            ? { $typeName: 'process.ProcessEvent', event: { case: 'keepalive', value: { $typeName: 'process.ProcessEvent.KeepAlive' } } }
            : next;
        if (event.event.case === 'end' && errorBeforeEnd !== undefined) {
          throw new ConnectError('the stream failed before the end event (injected)', errorBeforeEnd.code ?? Code.Internal);
        }
        if (strike(event)) return;
        yield { event };
        if (event.event.case === 'end') return;
        if (counted()) {
          if (silence !== undefined) await sleep(2 ** 31 - 1, ctx.signal);
          return;
        }
      }
    } finally {
      // A client that goes away stops only its own subscription, never the command.
      command.unsubscribe(subscription);
    }
  }

  function configOf(config: ProcessConfig | undefined): EmulatedProcess['config'] {
    return {
      cmd: config?.cmd ?? '',
      args: [...(config?.args ?? [])],
      envs: { ...(config?.envs ?? {}) },
      cwd: config?.cwd,
    };
  }

  const routes = (router: ConnectRouter): void => {
    router.service(ProcessService, {
      async *start(request, ctx) {
        const raw = await enter('Start', toJson(ProcessService.method.start.input, request), ctx);
        const config = configOf(request.process);
        // The account named in Basic auth, else the emulator's own (envd's default user).
        const username = basicUser(raw.req);
        const account = username === undefined ? undefined : findAccount(username);
        const switching = account !== undefined && account.uid !== process.getuid?.();
        if (switching && process.getuid?.() !== 0) {
          throw new ConnectError(`the emulator does not run as root and cannot run commands as '${account.name}'`, Code.PermissionDenied);
        }
        // envd's default working directory: its configured one, else the account's home.
        const baseCwd = options.cwd ?? account?.home ?? homedir();
        const cwd = config.cwd === undefined || config.cwd === '' ? baseCwd : isAbsolute(config.cwd) ? config.cwd : resolve(baseCwd, config.cwd);
        try {
          if (!statSync(cwd).isDirectory()) throw new Error('not a directory');
        } catch {
          throw new ConnectError(`cwd '${cwd}' does not exist`, Code.InvalidArgument);
        }
        const env: Record<string, string> = {
          PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
          HOME: account?.home ?? process.env['HOME'] ?? homedir(),
          USER: account?.name ?? process.env['USER'] ?? 'user',
          LOGNAME: account?.name ?? process.env['LOGNAME'] ?? process.env['USER'] ?? 'user',
          ...options.env,
          ...(account === undefined ? {} : { HOME: account.home, USER: account.name, LOGNAME: account.name }),
          ...config.envs,
        };
        // envd keeps a stdin pipe unless the request says `stdin: false`.
        const keepStdin = request.stdin ?? true;
        const refused = (error: Error): ConnectError =>
          new ConnectError(`error starting process '${[config.cmd, ...config.args].join(' ')}': ${error.message}`, Code.InvalidArgument);
        let child: ChildProcess;
        try {
          child = spawn(config.cmd, config.args, {
            cwd,
            env,
            stdio: [keepStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
            ...(switching ? { uid: account.uid, gid: account.gid } : {}),
          });
        } catch (error) {
          // Node throws some exec failures (E2BIG: an argument or the
          // environment too long) instead of emitting them: the same answer.
          throw refused(error as Error);
        }
        // Read before the event loop can reap it: the start time tells this
        // command's group from a later one that reuses its number.
        const leaderStartTicks = child.pid === undefined ? undefined : processState(child.pid)?.startTicks;
        await new Promise<void>((resolveSpawn, rejectSpawn) => {
          child.once('spawn', resolveSpawn);
          child.once('error', (error) => {
            if (child.pid === undefined) {
              rejectSpawn(refused(error));
            }
          });
        });
        const command = new Command(child, child.pid!, config, request.tag, keepStdin, drainAfterExitMs, (ended) => {
          running.delete(ended.pid);
        });
        const sandboxHeader = raw.req.headers['e2b-sandbox-id'];
        command.sandboxId = typeof sandboxHeader === 'string' ? sandboxHeader : undefined;
        command.user = account?.name;
        command.leaderStartTicks = leaderStartTicks;
        table.push(command);
        running.set(command.pid, command);
        const timeout = Number(raw.req.headers['connect-timeout-ms']);
        if (Number.isFinite(timeout) && timeout > 0) command.killAfter(timeout);
        const subscription = command.subscribe();
        const status = takeFault('Start', ['http-status'], raw.recorded, (fault) => fault.served === true);
        if (status !== undefined) {
          // Started, but the client is told otherwise.
          command.unsubscribe(subscription);
          answerStatus(raw, status);
          await hold(ctx);
          return;
        }
        const slow = takeFault('Start', ['slow-headers'], raw.recorded);
        if (slow !== undefined) await sleep(slow.ms, ctx.signal);
        yield* follow('Start', command, subscription, raw, ctx);
      },

      async *connect(request, ctx) {
        const raw = await enter('Connect', toJson(ProcessService.method.connect.input, request), ctx);
        const command = find(request.process);
        // No replay: a new subscriber sees only what happens from now on.
        const subscription = command.subscribe();
        const slow = takeFault('Connect', ['slow-headers'], raw.recorded);
        if (slow !== undefined) await sleep(slow.ms, ctx.signal);
        yield* follow('Connect', command, subscription, raw, ctx);
      },

      async list(request, ctx) {
        const call = await enter('List', toJson(ProcessService.method.list.input, request), ctx);
        await unaryAnswer('List', call, ctx);
        return {
          processes: [...running.values()].map((command) =>
            create(ProcessInfoSchema, {
              pid: command.pid,
              config: { cmd: command.config.cmd, args: [...command.config.args], envs: { ...command.config.envs }, ...(command.config.cwd === undefined ? {} : { cwd: command.config.cwd }) },
              ...(command.tag === undefined ? {} : { tag: command.tag }),
            }),
          ),
        };
      },

      async sendInput(request, ctx) {
        const raw = await enter('SendInput', toJson(ProcessService.method.sendInput.input, request), ctx);
        const command = find(request.process);
        const input = request.input?.input;
        if (input?.case !== 'stdin') throw new ConnectError('error writing to tty: tty not assigned to process', Code.Internal);
        const stdin = command.child.stdin;
        if (!command.stdinOpen || stdin === null || stdin.destroyed || stdin.writableEnded) {
          throw new ConnectError('error writing to stdin: stdin not enabled or closed', Code.Internal);
        }
        await new Promise<void>((resolveWrite, rejectWrite) => {
          stdin.write(input.value, (error) => {
            if (error) {
              rejectWrite(new ConnectError(`error writing to stdin: error writing to stdin of process '${command.pid}': ${error.message}`, Code.Internal));
            } else resolveWrite();
          });
        });
        if (takeFault('SendInput', ['drop-after-write'], raw.recorded) !== undefined) {
          raw.req.socket.destroy();
          await sleep(2 ** 31 - 1, ctx.signal);
        }
        await unaryAnswer('SendInput', raw, ctx);
        return {};
      },

      async closeStdin(request, ctx) {
        const call = await enter('CloseStdin', toJson(ProcessService.method.closeStdin.input, request), ctx);
        const command = find(request.process);
        const stdin = command.child.stdin;
        command.stdinOpen = false;
        if (stdin !== null && !stdin.destroyed && !stdin.writableEnded) {
          await new Promise<void>((resolveEnd) => stdin.end(() => resolveEnd()));
        }
        await unaryAnswer('CloseStdin', call, ctx);
        return {};
      },

      async sendSignal(request, ctx) {
        const call = await enter('SendSignal', toJson(ProcessService.method.sendSignal.input, request), ctx);
        const command = find(request.process);
        if (request.signal === WireSignal.SIGKILL) command.signal('SIGKILL');
        else if (request.signal === WireSignal.SIGTERM) command.signal('SIGTERM');
        else throw new ConnectError(`invalid signal: ${WireSignal[request.signal]}`, Code.Unimplemented);
        await unaryAnswer('SendSignal', call, ctx);
        return {};
      },

      async update(request, ctx) {
        await enter('Update', toJson(ProcessService.method.update.input, request), ctx);
        find(request.process);
        throw new ConnectError('tty not assigned to process', Code.Internal);
      },

      async streamInput(_requests, ctx) {
        await enter('StreamInput', null, ctx);
        throw new ConnectError('StreamInput is not emulated', Code.Unimplemented);
      },
    });
  };

  const raws = new WeakMap<object, RawRequest>();
  const connectHandler = connectNodeAdapter({
    routes,
    contextValues: (req) => createContextValues().set(rawKey, raws.get(req)),
  });

  async function controlPlane(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    requests.push({ method: `${req.method} ${req.url}`, at: Date.now(), headers: headerRecord(req), message: text === '' ? undefined : JSON.parse(text) });
    const json = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const apiKey = options.controlPlane?.apiKey;
    if (apiKey !== undefined && req.headers['x-api-key'] !== apiKey) {
      json(401, { code: 401, message: 'invalid API key' });
      return;
    }
    if (req.method === 'POST' && req.url === '/v2/sandboxes') {
      const body = (text === '' ? {} : JSON.parse(text)) as { templateID?: string };
      const sandbox = {
        sandboxId: `emulated-${++sandboxCounter}`,
        accessToken: randomUUID(),
        createdAt: Date.now(),
        killedAt: undefined as number | undefined,
      };
      sandboxes.set(sandbox.sandboxId, sandbox);
      json(201, {
        sandboxID: sandbox.sandboxId,
        templateID: body.templateID ?? 'base',
        clientID: 'emulated',
        envdVersion: '0.5.7',
        envdAccessToken: sandbox.accessToken,
      });
      return;
    }
    const kill = /^\/sandboxes\/([^/?]+)$/.exec(req.url ?? '');
    if (req.method === 'DELETE' && kill !== null) {
      const sandbox = sandboxes.get(decodeURIComponent(kill[1]!));
      if (sandbox === undefined || sandbox.killedAt !== undefined) {
        json(404, { code: 404, message: 'sandbox not found' });
        return;
      }
      // The VM goes: every process in it with it.
      for (const command of table) {
        if (command.sandboxId !== sandbox.sandboxId) continue;
        const alive = running.has(command.pid) ? [command.pid, ...emulator.descendants(command.pid)] : [];
        for (const pid of [...alive, ...ownGroupMembers(command.pid, command.leaderStartTicks, running.has(command.pid))]) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Gone.
          }
        }
      }
      sandbox.killedAt = Date.now();
      res.writeHead(204).end();
      return;
    }
    json(404, { code: 404, message: 'not found' });
  }

  const server: Server = createServer((req, res) => {
    raws.set(req, { req, res });
    if (req.method === 'GET' && (req.url === '/health' || req.url?.startsWith('/health?'))) {
      requests.push({ method: 'GET /health', at: Date.now(), headers: headerRecord(req), message: undefined });
      res.writeHead(sandboxOf(req)?.killedAt !== undefined ? 502 : 204).end();
      return;
    }
    if (options.controlPlane !== undefined && (req.url === '/v2/sandboxes' || req.url?.startsWith('/sandboxes/'))) {
      void controlPlane(req, res);
      return;
    }
    connectHandler(req, res);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolveListen, rejectListen) => {
    server.once('error', rejectListen);
    server.listen(0, '127.0.0.1', () => resolveListen());
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const emulator: EnvdEmulator = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    processes: () => [...table],
    sandboxes: () => [...sandboxes.values()].map((sandbox) => ({ ...sandbox })),
    process: (pid) => table.find((command) => command.pid === pid),
    groupMembers: (pgid) => livePids().filter((entry) => entry.pgrp === pgid).map((entry) => entry.pid),
    descendants(pid) {
      const all = livePids();
      const found = new Set<number>([pid]);
      let grew = true;
      while (grew) {
        grew = false;
        for (const entry of all) {
          if (!found.has(entry.pid) && found.has(entry.ppid)) {
            found.add(entry.pid);
            grew = true;
          }
        }
      }
      found.delete(pid);
      return [...found];
    },
    inject: (fault) => void faults.push(fault),
    pendingFaults: () => [...faults],
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    close() {
      closing ??= (async () => {
        // Only what is still ours: running commands with their descendants,
        // and live members of the groups the commands led.
        const targets = new Set<number>();
        for (const command of running.values()) {
          targets.add(command.pid);
          for (const pid of emulator.descendants(command.pid)) targets.add(pid);
        }
        const live = livePids();
        const grouped = new Set(live.map((entry) => entry.pgrp));
        for (const command of table) {
          if (!grouped.has(command.pid)) continue;
          for (const pid of ownGroupMembers(command.pid, command.leaderStartTicks, running.has(command.pid), live)) targets.add(pid);
        }
        for (const pid of targets) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Gone.
          }
        }
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
      })();
      return closing;
    },
    [Symbol.asyncDispose]: () => emulator.close(),
  };
  return emulator;
}
