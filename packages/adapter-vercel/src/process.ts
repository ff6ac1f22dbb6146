/**
 * One command on the Vercel Sandbox API, as the transport sees it: an
 * attached start whose answer streams the command's id, its log records
 * and its end. On the normal path that one request is all (ADR-0045).
 *
 * When the answer breaks after the id (a reset, a cut body, a clean end
 * without the end record), the log stream is read again: the service
 * replays it from the start, and the bytes already delivered are skipped,
 * per stream, so nothing is lost or repeated. A replay that ends cleanly is
 * taken as the whole output only once the command has exited and a second
 * replay agrees with it: a proxy may cut a body between two records, and
 * the log stream has no end record of its own.
 */
import { StdinClosed, type StreamName } from '@sandstream/types';
import { retry, type StartRequest, type TransportEnd, type TransportProcess, type TransportSink } from '@sandstream/remote';
import { ApiRefusal } from './api.js';
import { httpStatusOf, isFinalStreamError, neverSent } from './errors.js';
import type { LogLine } from './ndjson.js';
import { decodeStatus, signalNumber } from './status.js';
import { StdinWriter } from './stdin.js';
import { startBody, type VercelTransportSettings } from './settings.js';

const encoder = new TextEncoder();

type Totals = { stdout: number; stderr: number };

/** A replay ended cleanly, but a second one must agree before it is taken as the end. */
class NotConfirmed extends Error {}

export class VercelProcess implements TransportProcess {
  readonly #settings: VercelTransportSettings;
  readonly #sink: TransportSink;
  readonly #request: StartRequest;
  readonly #abort = new AbortController();
  /** Standard input's requests end only with close() (a release), not with the answer's end. */
  readonly #stdinAbort = new AbortController();
  /** UTF-8 bytes delivered so far, per stream. */
  readonly #delivered: Totals = { stdout: 0, stderr: 0 };
  #cmdId: string | undefined;
  #stdin: StdinWriter | undefined;
  #closed = false;
  #paused: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(settings: VercelTransportSettings, request: StartRequest, sink: TransportSink) {
    this.#settings = settings;
    this.#request = request;
    this.#sink = sink;
    void this.#run();
  }

  readonly #waitIfPaused = (): Promise<void> | undefined => this.#paused?.promise;

  /** Delivers what of `line` is new, `seen` bytes of its stream having come before it in this answer. */
  #deliver(line: LogLine, seen: Totals): void {
    const stream: StreamName = line.stream;
    let bytes = encoder.encode(line.data);
    const skip = this.#delivered[stream] - seen[stream];
    seen[stream] += bytes.byteLength;
    if (skip >= bytes.byteLength) return;
    if (skip > 0) bytes = bytes.subarray(skip);
    this.#delivered[stream] += bytes.byteLength;
    this.#sink.output(stream, bytes);
  }

  #onId(cmdId: string): void {
    this.#cmdId = cmdId;
    if (!this.#settings.stdinService) return;
    const wanted = this.#request.stdin;
    this.#stdin = new StdinWriter(this.#settings.api, cmdId, this.#stdinAbort.signal, this.#settings.retry, true);
    // Without a writer or input, the command reads end-of-file (SS-STDIN-4): its pipe is closed
    // at once, beside the start's answer.
    if (!wanted) void this.#stdin.close().catch(() => undefined);
  }

  async #run(): Promise<void> {
    const seen: Totals = { stdout: 0, stderr: 0 };
    let exitCode: number | undefined;
    let failure: unknown;
    // The command record comes first and at once; an answer that brings none within the bound
    // (a proxy holding a streamed answer back) is a start of unknown outcome.
    const bound = this.#settings.startTimeoutMs;
    const timer = setTimeout(() => {
      if (this.#cmdId === undefined) this.#abort.abort(new Error(`no command record in the start's answer within ${bound} ms`));
    }, bound);
    try {
      const body = startBody(this.#request.argv, this.#settings, this.#request);
      for await (const record of this.#settings.api.records({ start: body }, this.#abort.signal, this.#waitIfPaused)) {
        if (this.#closed) return;
        if (record.kind === 'log') this.#deliver(record.line, seen);
        else if (this.#cmdId === undefined) this.#onId(record.id);
        else if (record.exitCode !== null) exitCode = record.exitCode;
      }
    } catch (error) {
      failure = this.#abort.signal.aborted && !this.#closed ? this.#abort.signal.reason : error;
    } finally {
      clearTimeout(timer);
    }
    if (this.#closed) return;
    if (exitCode !== undefined) return this.#end({ kind: 'exit', status: decodeStatus(exitCode) });
    if (this.#cmdId === undefined) return this.#end(this.#startFailure(failure));
    if (failure !== undefined && isFinalStreamError(failure)) return this.#end({ kind: 'broken', error: failure, sent: true });
    try {
      const code = await this.#replay(this.#cmdId);
      if (!this.#closed) this.#end({ kind: 'exit', status: decodeStatus(code) });
    } catch (error) {
      if (!this.#closed) this.#end({ kind: 'broken', error, sent: true });
    }
  }

  /** The start's answer failed before the command's id: refused, never sent, or unknown. */
  #startFailure(failure: unknown): TransportEnd {
    const status = httpStatusOf(failure);
    if (failure instanceof ApiRefusal && (status === 400 || status === 404 || status === 422)) return { kind: 'refused', reason: failure.message, error: failure };
    // Credentials refused, or a stopped sandbox: nothing ran.
    if (status === 401 || status === 403 || status === 410) return { kind: 'broken', error: failure, sent: false };
    const error = failure ?? new Error('the answer of the start ended before the command record');
    return { kind: 'broken', error, sent: !neverSent(error) };
  }

  /** Reads the log stream again until a clean end is confirmed; gives the command's exit code. */
  #replay(cmdId: string): Promise<number> {
    const { api } = this.#settings;
    let last: Totals | undefined;
    return retry(
      this.#settings.retry,
      async () => {
        const seen: Totals = { stdout: 0, stderr: 0 };
        for await (const record of api.records({ logsOf: cmdId }, this.#abort.signal, this.#waitIfPaused)) {
          if (this.#closed) return 0;
          if (record.kind === 'log') this.#deliver(record.line, seen);
        }
        if (seen.stdout < this.#delivered.stdout || seen.stderr < this.#delivered.stderr) {
          throw Object.assign(new Error(`the replayed log stream is shorter than what was already delivered`), { name: 'StreamError' });
        }
        const { exitCode } = await api.command(cmdId, true, this.#abort.signal);
        if (exitCode === null) throw new Error('the log stream ended while the command still ran');
        const agrees = last !== undefined && last.stdout === seen.stdout && last.stderr === seen.stderr;
        last = seen;
        if (!agrees) throw new NotConfirmed('a replay that ended cleanly, to be confirmed by another');
        return exitCode;
      },
      {
        retryable: (error) => !this.#closed && (error instanceof NotConfirmed || !isFinalStreamError(error)),
        retryAfterMs: (error) => (error instanceof ApiRefusal ? error.retryAfterMs : error instanceof NotConfirmed ? 0 : undefined),
        signal: this.#abort.signal,
      },
    );
  }

  #end(end: TransportEnd): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    this.resume();
    this.#sink.end(end);
  }

  async signal(signal: string): Promise<void> {
    const number = signalNumber(signal);
    if (number === undefined || this.#cmdId === undefined) throw new Error(`cannot deliver ${signal} to a command without an id`);
    const answer = await this.#settings.api.once(`/cmd/${this.#cmdId}/kill`, { signal: number }, AbortSignal.timeout(this.#settings.requestTimeoutMs));
    // Gone already: the command, or the sandbox.
    if (answer.status === 200 || answer.status === 404 || answer.status === 410) return;
    throw new Error(`the kill was answered HTTP ${answer.status}: ${answer.text.slice(0, 200)}`);
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    if (this.#stdin === undefined) throw new StdinClosed('this command has no standard input');
    await this.#stdin.write(data);
  }

  async closeStdin(): Promise<void> {
    await this.#stdin?.close();
  }

  pause(): void {
    if (this.#paused !== undefined) return;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.#paused = { promise, resolve };
  }

  resume(): void {
    const paused = this.#paused;
    this.#paused = undefined;
    paused?.resolve();
  }

  close(): void {
    this.#closed = true;
    this.#abort.abort();
    this.#stdinAbort.abort();
    this.resume();
  }
}
