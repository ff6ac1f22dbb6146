/**
 * A local emulator of the Vercel Sandbox REST API, as `@vercel/sandbox`
 * 3.5.0 calls it: a `node:http` server on 127.0.0.1 (random port) whose
 * commands are real local processes, plus a `fetch` that routes the SDK's
 * requests to it. Test infrastructure: it records every request, exposes
 * its process table and injects faults.
 *
 * @example
 * ```ts
 * import { Sandbox } from '@vercel/sandbox';
 * import { VercelEmulator } from '@sandstream/adapter-vercel/emulator';
 * await using emulator = await VercelEmulator.start();
 * const sandbox = await Sandbox.create({ ...emulator.credentials, fetch: emulator.fetch });
 * const done = await sandbox.runCommand('echo', ['hi']);
 * console.log(await done.stdout()); // "hi\n"
 * ```
 *
 * @packageDocumentation
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { constants } from 'node:os';
import { COMMAND_VARIABLE, killSession, scanProcesses, SESSION_VARIABLE, type EmulatedProcess } from './proc.js';

export type { EmulatedProcess } from './proc.js';
export { COMMAND_VARIABLE, SESSION_VARIABLE } from './proc.js';

/** Options of {@link VercelEmulator.start}. */
export interface EmulatorOptions {
  /**
   * Serve the standard-input endpoint (`POST .../cmd/{cmdId}/stdin`): every
   * command then gets a stdin pipe, as on a service with stdin. Default true.
   * When false, commands read end-of-file and the endpoint answers 404.
   */
  readonly stdin?: boolean;
  /** The sandbox's working directory (default: a fresh temporary directory, removed on close). */
  readonly cwd?: string;
  /** The base environment of commands (default: this process's). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Keep every request in {@link VercelEmulator.requests} (default true).
   * A long run that never reads them passes false: their bodies (all the
   * standard input written, in base64) would stay in memory for good, and
   * every spawn of a larger process costs more.
   */
  readonly recordRequests?: boolean;
}

/** One request the emulator received. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** The parsed JSON body, when there was one. */
  readonly body: unknown;
  /** The status answered (0 while a streamed answer is still open). */
  status: number;
  readonly at: number;
}

/** Which requests a fault applies to. */
export interface FaultTarget {
  /** HTTP method (any when omitted). */
  readonly method?: string;
  /** Matched against the path (without the `/api` prefix or the query). */
  readonly path: RegExp;
  /** A further test on the request as recorded (its parsed body, its query), e.g. one command's start by its arguments. */
  readonly match?: (request: RecordedRequest) => boolean;
  /** How many matching requests get the fault (default 1). */
  readonly times?: number;
  /** How many matching requests pass untouched before the fault applies (default 0): the second log request of a command, say. */
  readonly skip?: number;
  /**
   * Once the fault first applies, it applies to every matching request for
   * this long (an outage, a rate limiter's window; `times` is then
   * ignored). Default: `times` requests, however far apart.
   */
  readonly forMs?: number;
}

/**
 * A fault the emulator injects into matching requests. Each models a way
 * the network or a proxy in front of the service fails:
 * - `status`: an HTTP status in place of the answer (a 5xx of a gateway, a
 *   429 of a rate limiter with `Retry-After`), with a JSON error body or a
 *   bare text one.
 * - `reset`: the connection is destroyed instead of answering.
 * - `truncate`: the request is served, then the answer's headers and the
 *   first half of its body are sent and the connection is destroyed.
 * - `delay-headers`: the request is held (not yet served) for `ms`.
 * - `drop-logs`, `error-line`: a log stream cut part way, or ended with an
 *   error record.
 */
export type Fault =
  | (FaultTarget & {
      /** Answer `status` instead of serving the request. */
      readonly kind: 'status';
      readonly status: number;
      /** `Retry-After` header in seconds, for 429. */
      readonly retryAfter?: number;
      /**
       * `'before'` (default): the request is not served. `'after'`: it is
       * served (a command is started, say) and the answer is replaced, so the
       * client cannot know it took effect.
       */
      readonly when?: 'before' | 'after';
      /** `'json'` (default): the service's `{ error: { code, message } }`; `'text'`: a bare text body, as a proxy sends. */
      readonly body?: 'json' | 'text';
    })
  | (FaultTarget & {
      /** Destroys the connection instead of answering. */
      readonly kind: 'reset';
      /**
       * `'before'` (default): the request is not served. `'after'`: it is
       * served to the end of its answer (an attached command runs to its
       * end), then the connection is destroyed.
       */
      readonly when?: 'before' | 'after';
    })
  | (FaultTarget & {
      /**
       * Serves the request to the end of its answer, then sends the answer's
       * headers and the first half of its body and destroys the connection:
       * a response cut in the middle. With `boundary: true` (NDJSON answers,
       * such as an attached command's), the body instead ends cleanly after
       * its last whole record but one, as through a proxy that closed an
       * overlong response. (For a cut inside a log stream, see `drop-logs`.)
       */
      readonly kind: 'truncate';
      readonly boundary?: boolean;
    })
  | {
      /**
       * Cuts a log stream (`GET .../logs`) once `afterBytes` bytes of its
       * body were sent, in the middle of the record that crosses that
       * point: `close: 'reset'` (default) then destroys the connection,
       * `close: 'end'` ends the response as if it were complete (a
       * truncated NDJSON line, then a clean end).
       */
      readonly kind: 'drop-logs';
      readonly afterBytes: number;
      readonly close?: 'reset' | 'end';
      /** `'mid-record'` (default): in the record that crosses `afterBytes`; `'boundary'`: before it, so every record sent is whole. */
      readonly cut?: 'mid-record' | 'boundary';
      readonly cmdId?: string;
      readonly times?: number;
      /** How many log requests of the command pass untouched first. */
      readonly skip?: number;
    }
  | {
      /** Ends a log stream (`GET .../logs`) with an error record once `afterRecords` records were sent. */
      readonly kind: 'error-line';
      readonly code: string;
      readonly message: string;
      readonly afterRecords?: number;
      readonly cmdId?: string;
      readonly times?: number;
    }
  | (FaultTarget & {
      /** Holds matching requests for `ms` before serving them (their response headers come that much later). */
      readonly kind: 'delay-headers';
      readonly ms: number;
    });

/** A command the service started. */
export interface StartedCommand {
  readonly id: string;
  readonly sessionId: string;
  readonly name: string;
  readonly args: readonly string[];
  /** The variables its start request named. */
  readonly env: Readonly<Record<string, string>>;
  readonly startedAt: number;
  /** Null while it runs. */
  readonly exitCode: number | null;
}

/** An answer produced for a request whose answer a fault replaces. */
interface Captured {
  status: number;
  contentType: string;
  readonly chunks: Buffer[];
}

/** Where a log stream is written: the HTTP response, or nothing. */
interface LogSink {
  write(chunk: string | Uint8Array): boolean;
  end(chunk?: string | Uint8Array): void;
  once(event: 'close' | 'drain', listener: () => void): unknown;
  destroy(): void;
  readonly destroyed: boolean;
}

/** A sink for a request whose answer is replaced by a fault: the effect happens, nothing is sent. */
function nullSink(): LogSink {
  return {
    write: () => true,
    end: () => undefined,
    once: () => undefined,
    destroy: () => undefined,
    destroyed: true,
  };
}

/** A sink that keeps what is written, for a fault that sends it in part (or not at all) once it is complete. */
function captureSink(captured: Captured): LogSink {
  return {
    write: (chunk) => {
      captured.chunks.push(Buffer.from(chunk));
      return true;
    },
    end: (chunk) => {
      if (chunk !== undefined) captured.chunks.push(Buffer.from(chunk));
    },
    once: () => undefined,
    destroy: () => undefined,
    destroyed: false,
  };
}

interface LogRecord {
  readonly stream: 'stdout' | 'stderr';
  /** Where the record's NDJSON line (serialised once for every replay) is in the {@link OutputStore}. */
  readonly offset: number;
  readonly length: number;
}

/**
 * Where every command's output is kept for replays, as the service keeps a
 * command's logs while its sandbox lives: an append-only file, unlinked once
 * opened (it goes with the process), not the emulator's memory. Kept in
 * memory, the output of a long run (hundreds of MB) made every later spawn
 * slower, since fork() copies the page tables of the whole process and
 * blocks the event loop meanwhile (about 0.1 ms per MB resident here): each
 * command and each tree helper then waited longer to start.
 */
class OutputStore {
  private readonly fd: number;
  private size = 0;
  private closed = false;

  constructor() {
    const dir = mkdtempSync(join(tmpdir(), 'vercel-emulator-output-'));
    try {
      this.fd = openSync(join(dir, 'output'), 'w+', 0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  append(stream: 'stdout' | 'stderr', line: Buffer): LogRecord {
    const offset = this.size;
    if (!this.closed) {
      for (let done = 0; done < line.byteLength; ) done += writeSync(this.fd, line, done, line.byteLength - done, offset + done);
      this.size += line.byteLength;
    }
    return { stream, offset, length: this.closed ? 0 : line.byteLength };
  }

  line(record: LogRecord): Buffer {
    const buffer = Buffer.allocUnsafe(record.length);
    if (this.closed) return buffer.subarray(0, 0);
    for (let done = 0; done < record.length; ) {
      const read = readSync(this.fd, buffer, done, record.length - done, record.offset + done);
      if (read === 0) return buffer.subarray(0, done);
      done += read;
    }
    return buffer;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}

interface CommandState {
  readonly id: string;
  readonly name: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly sessionId: string;
  readonly startedAt: number;
  /** The variables the start request named (not the sandbox's base environment). */
  readonly env: Readonly<Record<string, string>>;
  readonly child: ChildProcess;
  exitCode: number | null;
  durationMs: number | undefined;
  readonly records: LogRecord[];
  /** Both pipes closed and the leader reaped: the log stream can end. */
  ended: boolean;
  readonly listeners: Set<() => void>;
  readonly exitWaiters: Set<() => void>;
  stdinConfirmed: number;
  stdinOpen: boolean;
  stdinWriting: Promise<void>;
  timer: NodeJS.Timeout | undefined;
}

interface SessionState {
  readonly id: string;
  readonly name: string;
  status: 'running' | 'stopped';
  readonly createdAt: number;
  updatedAt: number;
  stoppedAt: number | undefined;
  readonly timeout: number;
  readonly commands: Map<string, CommandState>;
}

const NDJSON = 'application/x-ndjson';
const SESSION_PATH = /^\/v2\/sandboxes\/sessions\/([^/]+)(\/.*)?$/;

function id(prefix: string): string {
  return `${prefix}_${randomBytes(9).toString('base64url')}`;
}

/** The longest NDJSON line the emulator sends for one record, in characters. */
const MAX_LINE = 64 * 1024;

/**
 * Appends `text` as one record, or as several when its JSON line would be
 * long (control characters escape to six characters each), never splitting
 * a surrogate pair.
 */
function pushRecords(store: OutputStore, records: LogRecord[], stream: 'stdout' | 'stderr', text: string): void {
  const record = (data: string): LogRecord => store.append(stream, Buffer.from(`${JSON.stringify({ stream, data })}\n`));
  // The line's length without building it: control characters escape to
  // six characters, a quote or backslash to two (U+2028/9 are not escaped).
  let length = text.length + 32;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20) length += 5;
    else if (code === 0x22 || code === 0x5c) length += 1;
  }
  if (length <= MAX_LINE) {
    records.push(record(text));
    return;
  }
  const size = Math.max(1, Math.ceil(text.length / Math.ceil(length / MAX_LINE)));
  for (let start = 0; start < text.length; ) {
    let end = Math.min(text.length, start + size);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
    records.push(record(text.slice(start, end)));
    start = end;
  }
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

function signalNumber(signal: NodeJS.Signals | null): number {
  if (signal === null) return 0;
  return (constants.signals as Record<string, number>)[signal] ?? 0;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'bad_request', 'the body is not JSON');
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The emulator. {@link VercelEmulator.start} listens; {@link close} kills
 * every process it started and stops listening.
 */
export class VercelEmulator {
  /** Every request received, in arrival order (none with `recordRequests: false`). */
  readonly requests: RecordedRequest[] = [];
  /** What `Sandbox.create()` needs besides `fetch`: token, team id and project id. */
  readonly credentials = { token: 'emulator-token', teamId: 'team_emulator', projectId: 'prj_emulator' } as const;
  /** A `fetch` that sends the SDK's requests (to its hard-coded base URL) here instead. */
  readonly fetch: typeof globalThis.fetch;

  private readonly sessions = new Map<string, SessionState>();
  /** Log streams being served, per command id. */
  private readonly liveLogs = new Map<string, Set<LogSink>>();
  private readonly faults: Array<Fault & { remaining: number; skipLeft: number; until?: number }> = [];
  private readonly sockets = new Set<import('node:net').Socket>();
  /** Every command's output, for replays. */
  private readonly output = new OutputStore();
  private readonly ownsCwd: boolean;
  private closed: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>`. */
    readonly url: string,
    private readonly options: EmulatorOptions,
    private readonly cwd: string,
    ownsCwd: boolean,
  ) {
    this.ownsCwd = ownsCwd;
    const base = url;
    this.fetch = (input, init) => {
      const original = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      const path = original.pathname.startsWith('/api/') ? original.pathname.slice(4) : original.pathname;
      const target = `${base}${path}${original.search}`;
      // The SDK passes its own undici dispatcher and retry settings; neither belongs to this fetch.
      const { dispatcher: _dispatcher, ...rest } = (init ?? {}) as RequestInit & { dispatcher?: unknown };
      return globalThis.fetch(target, rest);
    };
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('request', (req, res) => void this.handle(req, res));
  }

  /** Starts an emulator on 127.0.0.1 with a random port. */
  static async start(options: EmulatorOptions = {}): Promise<VercelEmulator> {
    const server = createServer({ keepAliveTimeout: 5_000 });
    await new Promise<void>((resolveListen, rejectListen) => {
      server.once('error', rejectListen);
      server.listen(0, '127.0.0.1', () => resolveListen());
    });
    const { port } = server.address() as AddressInfo;
    const ownsCwd = options.cwd === undefined;
    const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), 'vercel-emulator-'));
    return new VercelEmulator(server, `http://127.0.0.1:${port}`, options, resolve(cwd), ownsCwd);
  }

  /** Adds a fault; it applies to the next matching requests. */
  inject(fault: Fault): void {
    this.faults.push({ ...fault, remaining: fault.times ?? 1, skipLeft: ('skip' in fault ? fault.skip : undefined) ?? 0 });
  }

  /**
   * Breaks the log streams of a command (or of every command) that are open
   * right now, as a network fault in the middle of a live stream would.
   * Returns how many were broken.
   */
  breakLogStreams(cmdId?: string): number {
    let broken = 0;
    for (const [id, sinks] of this.liveLogs) {
      if (cmdId !== undefined && id !== cmdId) continue;
      for (const sink of sinks) {
        sink.destroy();
        broken++;
      }
      sinks.clear();
    }
    return broken;
  }

  /** Removes every pending fault. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  /**
   * The process table: every live process of this emulator's sandboxes (or
   * of one session), found by the tag the emulator puts in each command's
   * environment, so descendants that left the process group are listed too.
   */
  processes(sessionId?: string): EmulatedProcess[] {
    return scanProcesses(sessionId).filter(
      (p) => p.state !== 'Z' && p.state !== 'X' && this.sessions.has(p.sessionId),
    );
  }

  /**
   * Every command the service started (ended ones included), in start
   * order: what a request log cannot tell, since a start refused by a fault
   * is logged but never ran.
   */
  commands(sessionId?: string): StartedCommand[] {
    const all: StartedCommand[] = [];
    for (const session of this.sessions.values()) {
      if (sessionId !== undefined && session.id !== sessionId) continue;
      for (const c of session.commands.values()) {
        all.push({ id: c.id, sessionId: c.sessionId, name: c.name, args: c.args, env: c.env, startedAt: c.startedAt, exitCode: c.exitCode });
      }
    }
    return all.sort((a, b) => a.startedAt - b.startedAt);
  }

  /** Ids of the sessions created so far. */
  sessionIds(): string[] {
    return [...this.sessions.keys()];
  }

  /** Kills every process of every emulated sandbox and stops listening. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      for (const session of this.sessions.values()) await this.stopSession(session);
      await new Promise<void>((done) => {
        this.server.close(() => done());
        for (const socket of this.sockets) socket.destroy();
      });
      this.output.close();
      if (this.ownsCwd) rmSync(this.cwd, { recursive: true, force: true });
    })();
    return this.closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // ---- faults ------------------------------------------------------------

  private takeFault<K extends Fault['kind']>(
    kind: K,
    matches: (fault: Extract<Fault, { kind: K }>) => boolean,
  ): Extract<Fault, { kind: K }> | undefined {
    for (let index = 0; index < this.faults.length; index++) {
      const fault = this.faults[index]!;
      if (fault.kind !== kind || fault.remaining <= 0 || !matches(fault as never)) continue;
      if (fault.skipLeft > 0) {
        fault.skipLeft--;
        continue;
      }
      const forMs = 'forMs' in fault ? fault.forMs : undefined;
      if (forMs !== undefined) {
        const now = Date.now();
        fault.until ??= now + forMs;
        if (now >= fault.until) {
          // The window is over: this request passes, and so will the next ones.
          this.faults.splice(index, 1);
          return undefined;
        }
        return fault as unknown as Extract<Fault, { kind: K }>;
      }
      if (--fault.remaining <= 0) this.faults.splice(index, 1);
      return fault as unknown as Extract<Fault, { kind: K }>;
    }
    return undefined;
  }

  /** Faults added that never applied (one with `forMs` applied once its window opened). */
  pendingFaults(): Fault[] {
    return this.faults.filter((fault) => fault.until === undefined).map(({ remaining: _remaining, skipLeft: _skipLeft, until: _until, ...fault }) => fault as Fault);
  }

  // ---- routing -----------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    const path = url.pathname;
    const record: RecordedRequest = {
      method,
      path,
      query: Object.fromEntries(url.searchParams),
      body: undefined,
      status: 0,
      at: Date.now(),
    };
    if (this.options.recordRequests !== false) this.requests.push(record);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      record.status = status;
      if (res.headersSent || res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    try {
      const body = await readBody(req);
      (record as { body: unknown }).body = body;
      const targets = (f: FaultTarget): boolean =>
        f.path.test(path) && (f.method ?? method) === method && (f.match === undefined || f.match(record));
      const delay = this.takeFault('delay-headers', targets);
      if (delay !== undefined) await new Promise((r) => setTimeout(r, delay.ms));
      const fault = this.takeFault('status', targets);
      const faultAnswer = (): void => {
        const headers: Record<string, string> = {};
        if (fault!.retryAfter !== undefined) headers['retry-after'] = String(fault!.retryAfter);
        if (fault!.body === 'text') {
          record.status = fault!.status;
          if (res.headersSent || res.destroyed) return;
          res.writeHead(fault!.status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
          res.end(`injected ${fault!.status}\n`);
          return;
        }
        send(fault!.status, { error: { code: 'injected_fault', message: `injected ${fault!.status}` } }, headers);
      };
      if (fault !== undefined && fault.when !== 'after') return faultAnswer();
      const reset = this.takeFault('reset', targets);
      if (reset !== undefined && reset.when !== 'after') {
        record.status = -1;
        res.socket?.destroy();
        return;
      }
      const auth = req.headers.authorization;
      if (auth !== `Bearer ${this.credentials.token}`) {
        throw new HttpError(401, 'unauthorized', 'missing or wrong bearer token');
      }
      if (fault !== undefined) {
        // Serve it, then answer the fault: the effect happened, the client cannot know.
        await this.route(method, path, url, body, req, {
          json: () => undefined,
          stream: () => nullSink(),
          record,
        });
        return faultAnswer();
      }
      const truncate = this.takeFault('truncate', targets);
      if (reset !== undefined || truncate !== undefined) {
        // Served to the end of its answer, which is then lost (reset) or cut (truncate).
        const captured: Captured = { status: 0, contentType: 'application/json', chunks: [] };
        await this.route(method, path, url, body, req, {
          json: (status, payload) => {
            captured.status = status;
            captured.chunks.push(Buffer.from(JSON.stringify(payload)));
          },
          stream: () => {
            captured.status = 200;
            captured.contentType = NDJSON;
            return captureSink(captured);
          },
          record,
        });
        record.status = -1;
        if (reset !== undefined || res.destroyed) {
          res.socket?.destroy();
          return;
        }
        const whole = Buffer.concat(captured.chunks);
        if (truncate?.boundary === true) {
          // Whole records only, the last one missing, and a clean end.
          const end = whole.lastIndexOf(10, whole.byteLength - 2) + 1;
          res.writeHead(captured.status, { 'content-type': captured.contentType, 'content-length': String(end) });
          res.end(whole.subarray(0, end));
          return;
        }
        res.writeHead(captured.status, { 'content-type': captured.contentType, 'content-length': String(whole.byteLength) });
        res.write(whole.subarray(0, Math.floor(whole.byteLength / 2)), () => res.socket?.destroy());
        return;
      }
      await this.route(method, path, url, body, req, {
        json: (status, payload) => send(status, payload),
        stream: () => {
          record.status = 200;
          res.writeHead(200, { 'content-type': NDJSON });
          return {
            write: (chunk) => res.write(chunk),
            end: (chunk) => (chunk === undefined ? res.end() : res.end(chunk)),
            once: (event, listener) => res.once(event, listener),
            // A broken connection, as a network fault looks to the client.
            destroy: () => res.socket?.destroy(),
            get destroyed() {
              return res.destroyed;
            },
          };
        },
        record,
      });
    } catch (error) {
      if (error instanceof HttpError) {
        send(error.status, { error: { code: error.code, message: error.message }, ...error.extra });
      } else {
        send(500, { error: { code: 'internal', message: String(error) } });
      }
    }
  }

  private async route(
    method: string,
    path: string,
    url: URL,
    body: unknown,
    req: IncomingMessage,
    out: {
      json(status: number, payload: unknown): void;
      stream(): LogSink;
      record: RecordedRequest;
    },
  ): Promise<void> {
    if (method === 'POST' && (path === '/v3/sandboxes' || path === '/v2/sandboxes')) {
      const session = this.createSession(body);
      return out.json(200, { sandbox: this.sandboxJson(session), session: this.sessionJson(session), routes: [] });
    }
    const match = SESSION_PATH.exec(path);
    if (match === null) {
      const byName = /^\/v2\/sandboxes\/([^/]+)$/.exec(path);
      if (method === 'GET' && byName !== null) {
        const session = [...this.sessions.values()].find((s) => s.name === decodeURIComponent(byName[1]!));
        if (session === undefined) throw new HttpError(404, 'not_found', 'no such sandbox');
        if (session.status === 'stopped') throw new HttpError(410, 'sandbox_stopped', 'the sandbox is stopped');
        return out.json(200, { sandbox: this.sandboxJson(session), session: this.sessionJson(session), routes: [] });
      }
      throw new HttpError(404, 'not_found', `no route ${method} ${path}`);
    }
    const session = this.sessions.get(match[1]!);
    if (session === undefined) throw new HttpError(404, 'not_found', 'no such session');
    const rest = match[2] ?? '';
    if (method === 'GET' && rest === '') {
      return out.json(200, { session: this.sessionJson(session), routes: [] });
    }
    if (session.status === 'stopped') {
      throw new HttpError(410, 'sandbox_stopped', 'the sandbox is stopped');
    }
    if (method === 'POST' && rest === '/stop') {
      await this.stopSession(session);
      return out.json(200, { session: this.sessionJson(session), sandbox: this.sandboxJson(session) });
    }
    if (method === 'POST' && rest === '/cmd') {
      return this.startCommand(session, body, out);
    }
    const cmdMatch = /^\/cmd\/([^/]+)(\/[a-z]+)?$/.exec(rest);
    if (cmdMatch === null) throw new HttpError(404, 'not_found', `no route ${method} ${path}`);
    const command = session.commands.get(cmdMatch[1]!);
    if (command === undefined) throw new HttpError(404, 'not_found', 'no such command');
    const action = cmdMatch[2] ?? '';
    if (method === 'GET' && action === '') {
      if (url.searchParams.get('wait') === 'true') await this.whenExited(command, req);
      return out.json(200, { command: this.commandJson(command) });
    }
    if (method === 'GET' && action === '/logs') return this.streamLogs(command, out.stream(), out.record);
    if (method === 'POST' && action === '/kill') {
      const signal = isRecord(body) && typeof body['signal'] === 'number' ? body['signal'] : constants.signals.SIGTERM;
      // As the service is documented to: the command's own process, not its tree.
      if (command.exitCode === null && command.child.pid !== undefined) {
        try {
          process.kill(command.child.pid, signal);
        } catch {
          // gone meanwhile
        }
      }
      return out.json(200, { command: this.commandJson(command) });
    }
    if (method === 'POST' && action === '/stdin') return this.stdin(command, body, out);
    throw new HttpError(404, 'not_found', `no route ${method} ${path}`);
  }

  // ---- sessions ----------------------------------------------------------

  private createSession(body: unknown): SessionState {
    const now = Date.now();
    const options = isRecord(body) ? body : {};
    const session: SessionState = {
      id: id('sbx'),
      name: typeof options['name'] === 'string' ? options['name'] : id('sandbox'),
      status: 'running',
      createdAt: now,
      updatedAt: now,
      stoppedAt: undefined,
      timeout: typeof options['timeout'] === 'number' ? options['timeout'] : 300_000,
      commands: new Map(),
    };
    this.sessions.set(session.id, session);
    return session;
  }

  private async stopSession(session: SessionState): Promise<void> {
    if (session.status === 'stopped') return;
    session.status = 'stopped';
    session.stoppedAt = session.updatedAt = Date.now();
    for (const command of session.commands.values()) clearTimeout(command.timer);
    // Stopping a VM ends everything in it, wherever it moved in the tree; the
    // answer comes once nothing is left (a member forked meanwhile is killed too).
    for (let round = 0; round < 100 && killSession(session.id) > 0; round++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    for (const command of session.commands.values()) {
      if (command.child.pid !== undefined && command.exitCode === null) {
        try {
          process.kill(command.child.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }

  private sessionJson(session: SessionState): Record<string, unknown> {
    return {
      id: session.id,
      memory: 2048,
      vcpus: 1,
      region: 'iad1',
      runtime: 'node24',
      timeout: session.timeout,
      status: session.status,
      requestedAt: session.createdAt,
      startedAt: session.createdAt,
      createdAt: session.createdAt,
      updatedAt: session.updatedAt,
      cwd: this.cwd,
      ...(session.stoppedAt === undefined ? {} : { stoppedAt: session.stoppedAt }),
    };
  }

  private sandboxJson(session: SessionState): Record<string, unknown> {
    return {
      name: session.name,
      persistent: false,
      region: 'iad1',
      vcpus: 1,
      memory: 2048,
      runtime: 'node24',
      timeout: session.timeout,
      createdAt: session.createdAt,
      updatedAt: session.updatedAt,
      currentSessionId: session.id,
      status: session.status,
      cwd: this.cwd,
    };
  }

  // ---- commands ----------------------------------------------------------

  private commandJson(command: CommandState): Record<string, unknown> {
    return {
      id: command.id,
      name: command.name,
      args: command.args,
      cwd: command.cwd,
      sessionId: command.sessionId,
      exitCode: command.exitCode,
      startedAt: command.startedAt,
      ...(command.durationMs === undefined ? {} : { durationMs: command.durationMs }),
    };
  }

  private async startCommand(
    session: SessionState,
    body: unknown,
    out: { json(status: number, payload: unknown): void; stream(): LogSink; record: RecordedRequest },
  ): Promise<void> {
    if (!isRecord(body) || typeof body['command'] !== 'string' || body['command'] === '') {
      throw new HttpError(400, 'bad_request', 'command must be a non-empty string');
    }
    const args = Array.isArray(body['args']) ? body['args'].map(String) : [];
    const env: Record<string, string> = { ...(this.options.env ?? (process.env as Record<string, string>)) };
    if (isRecord(body['env'])) {
      // Defined, not assigned: a variable named `__proto__` is one like any other.
      for (const [k, v] of Object.entries(body['env'])) Object.defineProperty(env, k, { value: String(v), enumerable: true, writable: true, configurable: true });
    }
    const cwd = typeof body['cwd'] === 'string' && body['cwd'] !== '' ? resolve(this.cwd, body['cwd']) : this.cwd;
    const cmdId = id('cmd');
    env[SESSION_VARIABLE] = session.id;
    env[COMMAND_VARIABLE] = cmdId;
    const withStdin = this.options.stdin !== false;
    let child: ChildProcess;
    try {
      child = spawn(body['command'], args, {
        cwd,
        env,
        stdio: [withStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
        // Its own process group, so the emulator's own signals never reach it by accident.
        detached: true,
      });
    } catch (error) {
      throw new HttpError(400, 'bad_request', `the command could not be started: ${String(error)}`);
    }
    await new Promise<void>((resolveSpawn, rejectSpawn) => {
      child.once('spawn', () => resolveSpawn());
      child.once('error', (error: NodeJS.ErrnoException) => {
        if (child.pid === undefined) {
          rejectSpawn(new HttpError(400, 'bad_request', `the command could not be started: ${error.code ?? ''} ${error.message}`));
        }
      });
    });
    const requested: Record<string, string> = {};
    if (isRecord(body['env'])) {
      for (const [k, v] of Object.entries(body['env'])) Object.defineProperty(requested, k, { value: String(v), enumerable: true });
    }
    const command: CommandState = {
      env: requested,
      id: cmdId,
      name: body['command'],
      args,
      cwd,
      sessionId: session.id,
      startedAt: Date.now(),
      child,
      exitCode: null,
      durationMs: undefined,
      records: [],
      ended: false,
      listeners: new Set(),
      exitWaiters: new Set(),
      stdinConfirmed: 0,
      stdinOpen: withStdin,
      stdinWriting: Promise.resolve(),
      timer: undefined,
    };
    session.commands.set(cmdId, command);
    this.attach(command);
    const timeout = body['timeout'];
    if (typeof timeout === 'number' && timeout > 0) {
      // The command timeout: the service ends the command (its own process).
      command.timer = setTimeout(() => {
        if (command.exitCode === null && child.pid !== undefined) {
          try {
            process.kill(child.pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }, timeout);
    }
    if (body['wait'] === true) {
      const res = out.stream();
      res.write(`${JSON.stringify({ command: this.commandJson(command) })}\n`);
      // Attached: the start record, the logs, then the finished command, in one stream.
      await this.streamLogs(command, res, out.record, () => {
        res.write(`${JSON.stringify({ command: this.commandJson(command) })}\n`);
      });
      return;
    }
    out.json(200, { command: this.commandJson(command) });
  }

  private attach(command: CommandState): void {
    const { child } = command;
    const notify = (): void => {
      const listeners = [...command.listeners];
      command.listeners.clear();
      for (const listener of listeners) listener();
    };
    const flushes: Array<() => void> = [];
    for (const stream of ['stdout', 'stderr'] as const) {
      // A streaming decoder: a character split across reads is decoded whole;
      // invalid bytes become U+FFFD, as the WHATWG decoder replaces them.
      const decoder = new TextDecoder('utf-8');
      const pipe = child[stream]!;
      let flushed = false;
      // The end of the pipe: an incomplete sequence left in the decoder becomes U+FFFD.
      const flush = (): void => {
        if (flushed) return;
        flushed = true;
        const tail = decoder.decode();
        if (tail !== '') pushRecords(this.output, command.records, stream, tail);
      };
      flushes.push(flush);
      pipe.on('data', (data: Buffer) => {
        const text = decoder.decode(data, { stream: true });
        if (text !== '') pushRecords(this.output, command.records, stream, text);
        notify();
      });
      pipe.on('error', () => undefined);
      pipe.once('close', () => {
        flush();
        notify();
      });
    }
    child.stdin?.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      clearTimeout(command.timer);
      command.exitCode = code ?? 128 + signalNumber(signal);
      command.durationMs = Date.now() - command.startedAt;
      command.stdinOpen = false;
      for (const waiter of command.exitWaiters) waiter();
      command.exitWaiters.clear();
      notify();
    });
    child.once('close', () => {
      // After the leader exited and both pipes closed (whoever held them). The
      // child's own 'close' can come before the pipes' listeners ran: flush first.
      for (const flush of flushes) flush();
      command.ended = true;
      notify();
    });
  }

  private whenExited(command: CommandState, req: IncomingMessage): Promise<void> {
    if (command.exitCode !== null) return Promise.resolve();
    return new Promise((resolveExit) => {
      // A kept-alive socket serves many requests: its listener goes with the wait.
      const socket = req.socket;
      const done = (): void => {
        command.exitWaiters.delete(done);
        socket.off('close', done);
        resolveExit();
      };
      command.exitWaiters.add(done);
      socket.once('close', done);
    });
  }

  /** Replays the command's records from the start, then follows live until it ended. */
  private streamLogs(
    command: CommandState,
    res: LogSink,
    record: RecordedRequest,
    beforeEnd?: () => void,
  ): Promise<void> {
    // Log-stream faults hit the log endpoint only, not the attached start's stream.
    const logs = beforeEnd === undefined;
    const drop = logs ? this.takeFault('drop-logs', (f) => f.cmdId === undefined || f.cmdId === command.id) : undefined;
    const errorLine = logs
      ? this.takeFault('error-line', (f) => f.cmdId === undefined || f.cmdId === command.id)
      : undefined;
    let index = 0;
    let sentBytes = 0;
    let sentRecords = 0;
    let live = this.liveLogs.get(command.id);
    if (live === undefined) this.liveLogs.set(command.id, (live = new Set()));
    const sinks = live;
    if (logs) sinks.add(res);
    return new Promise<void>((done) => {
      let finished = false;
      const finish = (): void => {
        if (finished) return;
        finished = true;
        sinks.delete(res);
        if (sinks.size === 0) this.liveLogs.delete(command.id);
        command.listeners.delete(pump);
        done();
      };
      res.once('close', finish);
      const pump = (): void => {
        if (finished || res.destroyed) return finish();
        while (index < command.records.length) {
          if (errorLine !== undefined && sentRecords >= (errorLine.afterRecords ?? 0)) {
            res.end(`${JSON.stringify({ stream: 'error', data: { code: errorLine.code, message: errorLine.message } })}\n`);
            return finish();
          }
          const line = this.output.line(command.records[index++]!);
          const bytes = line.byteLength;
          if (drop !== undefined && sentBytes + bytes > drop.afterBytes) {
            // Part of the line, then the connection breaks (or the response
            // ends as if complete): a truncated response.
            const cut = drop.cut === 'boundary' ? line.subarray(0, 0) : line.subarray(0, Math.max(0, drop.afterBytes - sentBytes));
            record.status = -1;
            if (drop.close === 'end') {
              res.end(cut.byteLength === 0 ? undefined : cut);
              return finish();
            }
            if (cut.byteLength > 0) res.write(cut);
            setImmediate(() => res.destroy());
            return finish();
          }
          sentBytes += bytes;
          sentRecords++;
          if (!res.write(line)) {
            res.once('drain', pump);
            return;
          }
        }
        if (command.ended) {
          if (errorLine !== undefined) {
            res.end(`${JSON.stringify({ stream: 'error', data: { code: errorLine.code, message: errorLine.message } })}\n`);
            return finish();
          }
          beforeEnd?.();
          res.end();
          return finish();
        }
        command.listeners.add(pump);
      };
      pump();
    });
  }

  // ---- standard input ----------------------------------------------------

  /**
   * The standard-input protocol: `{ offset, data (base64), close? }`. The
   * offset is how many bytes the client believes were confirmed; bytes the
   * service already has are skipped, so a resent request is harmless. The
   * answer carries the confirmed offset after the write. A command that
   * never had stdin, stopped reading or exited answers 409
   * `stdin_unavailable`.
   */
  private async stdin(
    command: CommandState,
    body: unknown,
    out: { json(status: number, payload: unknown): void },
  ): Promise<void> {
    if (this.options.stdin === false) throw new HttpError(404, 'not_found', 'no stdin endpoint');
    if (!isRecord(body)) throw new HttpError(400, 'bad_request', 'the body must be an object');
    const offset = body['offset'];
    const data = body['data'] ?? '';
    if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0 || typeof data !== 'string') {
      throw new HttpError(400, 'bad_request', 'offset must be a non-negative integer and data a base64 string');
    }
    const bytes = Buffer.from(data, 'base64');
    // Serialised per command: offsets are only meaningful in order.
    const previous = command.stdinWriting;
    let release!: () => void;
    command.stdinWriting = new Promise((r) => (release = r));
    await previous;
    try {
      const pipe = command.child.stdin;
      const unavailable = (): never => {
        throw new HttpError(409, 'stdin_unavailable', 'the command is not reading standard input', {
          offset: command.stdinConfirmed,
        });
      };
      if (offset > command.stdinConfirmed) {
        throw new HttpError(409, 'offset_mismatch', 'the offset is ahead of what was received', {
          offset: command.stdinConfirmed,
        });
      }
      const fresh = bytes.subarray(Math.min(bytes.byteLength, command.stdinConfirmed - offset));
      if (fresh.byteLength > 0) {
        if (!command.stdinOpen || pipe === null || pipe === undefined || pipe.destroyed || pipe.writableEnded) unavailable();
        const ok = await new Promise<boolean>((resolveWrite) => pipe!.write(fresh, (error) => resolveWrite(!error)));
        if (!ok) {
          command.stdinOpen = false;
          unavailable();
        }
        command.stdinConfirmed += fresh.byteLength;
      } else if (body['close'] !== true && (!command.stdinOpen || pipe == null || pipe.destroyed)) {
        // An empty request answers the confirmed offset, open or not.
        return out.json(200, { offset: command.stdinConfirmed, open: false });
      }
      if (body['close'] === true && command.stdinOpen) {
        command.stdinOpen = false;
        await new Promise<void>((r) => (pipe ? pipe.end(() => r()) : r()));
      }
      out.json(200, { offset: command.stdinConfirmed, open: command.stdinOpen });
    } finally {
      release();
    }
  }
}
