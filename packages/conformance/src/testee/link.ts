/**
 * The kit's end of a testee: requests, their answers, callback calls, and the
 * faults of the link itself, which are harness errors and never verdicts.
 */
import { AsyncResource } from 'node:async_hooks';
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from 'node:worker_threads';
import { HarnessError } from '../assert.js';
import { KIT_SPEC_VERSION } from '../version.js';
import { decodeError, type ThrownByCallback, type WireError } from './errors.js';
import { startLinkWorker, type FromWorker, type ToWorker } from './link-worker.js';
import { SYNC_OPS, TESTEE_PROTOCOL, type HelloAnswer, type Op, type Requests, type TwoStepOp } from './protocol.js';
import { decodeValue, MalformedValue, type WireValue } from './values.js';

/**
 * How to start a testee: a program that serves an adapter, in any language,
 * over the testee protocol on its standard input and output (spec 1.3
 * section 18, ADR-0038).
 *
 * @example
 * ```ts
 * import { runConformance, type TesteeCommand } from '@sandstream/conformance';
 * const testee: TesteeCommand = { command: 'python3', args: ['python/testee.py'] };
 * const report = await runConformance({ testee });
 * console.log(report.ok ? 'conforms' : 'does not conform');
 * ```
 */
export interface TesteeCommand {
  /** A command line run by the shell when `args` is absent; else the program, run with `args` and no shell. */
  readonly command: string;
  /** The program's arguments; with them, `command` is a program run without a shell. */
  readonly args?: readonly string[];
  /** The testee's working directory (default: the kit's). */
  readonly cwd?: string;
  /** The testee's whole environment (default: the kit's). */
  readonly env?: Readonly<Record<string, string>>;
  /** Pass the testee's standard error on to the kit's (default true). */
  readonly forwardStderr?: boolean;
}

/** The least bound on a silence or a synchronous answer; scaled up by the hello's round trip. */
const MIN_BOUND_MS = 10_000;
/** How many ping round trips the bound's median is taken from. */
const BOUND_PINGS = 5;
/**
 * How many of the latest requests keep their async context for a fault the
 * testee reports late. A fault names requests of the case in flight; one
 * naming only requests older than these is charged as a fault of unknown
 * origin (to the cases in flight, ADR-0031), and a long run's memory stays
 * flat.
 */
const REMEMBERED_REQUESTS = 4_096;

interface Pending {
  readonly op: string;
  /** Receives the properties of the Process the request concerns, as they were when its call settled. */
  readonly onProps?: ((props: unknown) => void) | undefined;
  /** The async context the request was made in: a fault its work raises in the testee is raised here. */
  readonly resource: AsyncResource;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** One running testee and the requests in flight to it. */
export class TesteeLink {
  readonly #worker: Worker;
  readonly #flag: Int32Array;
  readonly #syncPort: MessagePort;
  readonly #pending = new Map<string, Pending>();
  /** Each callback with the async context it was registered in: the case whose call handed it over. */
  readonly #callbacks = new Map<string, { readonly fn: (...args: unknown[]) => unknown; readonly context: AsyncResource }>();
  readonly #thrown = new Map<string, unknown>();
  /** The async context of every request, kept for the faults its work raises, even late. */
  readonly #resources = new Map<string, AsyncResource>();
  readonly #ended: Promise<string>;
  #next = 0;
  #boundMs = MIN_BOUND_MS;
  #fatal: string | undefined;
  #onFatal: ((message: string) => void) | undefined;
  #closing: Promise<{ how: string; error?: unknown }> | undefined;
  /**
   * Set once `close()` is called: the run is over, and a request after that
   * (a case's body still running after its verdict, disposing its Process)
   * would wait on a testee that is leaving. It is refused at once instead,
   * without a fault of the link.
   */
  #closed: string | undefined;

  private constructor(command: TesteeCommand) {
    const channel = new MessageChannel();
    const flag = new SharedArrayBuffer(4);
    this.#flag = new Int32Array(flag);
    this.#syncPort = channel.port1;
    this.#worker = startLinkWorker({
      command: command.command,
      args: command.args,
      cwd: command.cwd,
      env: command.env,
      forwardStderr: command.forwardStderr ?? true,
      flag,
      syncPort: channel.port2,
    });
    let ended: (how: string) => void;
    this.#ended = new Promise((resolve) => (ended = resolve));
    this.#worker.on('message', (message: FromWorker) => {
      if (message.kind === 'fatal') this.#fail(message.message);
      else if (message.kind === 'ended') ended(message.how);
      else this.#receive(message.message);
    });
    this.#worker.on('error', (error) => this.#fail(`the kit's link to the testee failed: ${error.message}`));
    this.#worker.on('exit', () => ended('the link ended'));
  }

  /** Starts the testee and exchanges the hello; rejects with a HarnessError naming what went wrong. */
  static async open(command: TesteeCommand, helloTimeoutMs = 60_000): Promise<{ link: TesteeLink; hello: HelloAnswer; roundTripMs: number }> {
    const link = new TesteeLink(command);
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      // The hello runs the module's setup hook and makes a first sandbox: a testee that answers
      // pings but never its hello (a factory that hangs) is a harness error too, not a hang.
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new HarnessError(`the testee did not answer its hello within ${helloTimeoutMs} ms (its setup hook or its factory hung)`)), helloTimeoutMs);
      });
      const hello = (await Promise.race([link.request('hello', { protocol: TESTEE_PROTOCOL, spec: KIT_SPEC_VERSION }), late])) as HelloAnswer;
      clearTimeout(timer);
      const roundTripMs = performance.now() - started;
      if (typeof hello !== 'object' || hello === null || hello.protocol !== TESTEE_PROTOCOL) {
        throw new HarnessError(`the testee speaks protocol ${JSON.stringify((hello as { protocol?: unknown } | null)?.protocol)}, and this kit speaks ${TESTEE_PROTOCOL}`);
      }
      if (typeof hello.spec !== 'string' || !/^1\.[0-9]+$/.test(hello.spec)) throw new HarnessError(`the testee's hello states spec ${JSON.stringify(hello.spec)}, which this kit does not know`);
      // A ping round trip per second of the bound, at least: a slow testee is not a hung one. The
      // median of a few: one ping that met a pause of the testee (its compiler, its collector, a
      // loaded machine) made a bound of minutes, and a hung testee went unnoticed for as long.
      const trips: number[] = [];
      for (let i = 0; i < BOUND_PINGS; i++) {
        const pingMs = performance.now();
        await link.request('ping', {});
        trips.push(performance.now() - pingMs);
      }
      trips.sort((a, b) => a - b);
      link.#boundMs = Math.max(MIN_BOUND_MS, Math.round(200 * trips[Math.floor(trips.length / 2)]!));
      link.#post({ kind: 'silence', ms: link.#boundMs });
      return { link, hello, roundTripMs };
    } catch (error) {
      clearTimeout(timer);
      await link.close(0);
      throw error instanceof HarnessError ? error : new HarnessError(`the testee's hello failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** The fault of the link, if one happened: once set, every request fails with it. */
  get fatal(): string | undefined {
    return this.#fatal;
  }

  /** Called once, when the link fails. */
  onFatal(handler: (message: string) => void): void {
    this.#onFatal = handler;
    if (this.#fatal !== undefined) handler(this.#fatal);
  }

  /** Registers a callback of the kit's under an id the testee calls it by. */
  callback(fn: (...args: unknown[]) => unknown): string {
    const id = `c${++this.#next}`;
    this.#callbacks.set(id, { fn, context: new AsyncResource('SandstreamTesteeCallback') });
    return id;
  }

  /** What the kit's callback `id` threw, if it did (the cause of a `CallbackFailed`). */
  readonly thrownBy: ThrownByCallback = (id) => this.#thrown.get(id);

  /** Sends a request and resolves with its answer's value, decoded; rejects with the adapter's error, rebuilt. */
  request<K extends Op>(op: K, params: Requests[K], onProps?: (props: unknown) => void): Promise<unknown> {
    // The bye is close()'s own request.
    const refused = op === 'bye' ? this.#fatal : this.#refusal();
    if (refused !== undefined) return Promise.reject(new HarnessError(refused));
    const id = `r${++this.#next}`;
    const resource = new AsyncResource('SandstreamTesteeRequest');
    this.#remember(id, resource);
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { op, resolve, reject, resource, onProps });
      this.#post({ kind: 'send', id, op, line: JSON.stringify({ id, op, ...params }), sync: false });
    });
  }

  /** Sends a request the testee answers at once, and blocks until it does (bounded); throws the adapter's error, rebuilt. */
  requestSync<K extends Op>(op: K, params: Requests[K]): unknown {
    if (!SYNC_OPS.has(op)) throw new Error(`${op} is not a synchronous request`);
    return this.#sendSync(op, params, undefined);
  }

  /**
   * A two-step request (`run`, `attach`, `commands`, and a Process's calls that
   * return a promise, but iteration): blocks until the testee
   * says whether the call threw, throwing what it threw, and returns a promise
   * of how the call's own promise settles.
   */
  requestTwoStep<K extends TwoStepOp>(op: K, params: Omit<Requests[K], 'settle'>, onProps?: (props: unknown) => void): Promise<unknown> {
    const refused = this.#refusal();
    if (refused !== undefined) throw new HarnessError(refused);
    const settle = `r${++this.#next}`;
    const resource = new AsyncResource('SandstreamTesteeRequest');
    this.#remember(settle, resource);
    const settled = new Promise((resolve, reject) => this.#pending.set(settle, { op, resolve, reject, resource, onProps }));
    // A rejection nobody awaits yet (the first step may still throw) is not unhandled.
    settled.catch(() => undefined);
    try {
      this.#sendSync(op, { ...params, settle } as Requests[K], settle);
    } catch (error) {
      this.#pending.delete(settle);
      throw error;
    }
    return settled;
  }

  #sendSync(op: Op, params: object, settle: string | undefined): unknown {
    const refused = this.#refusal();
    if (refused !== undefined) throw new HarnessError(refused);
    const id = `r${++this.#next}`;
    this.#remember(id, new AsyncResource('SandstreamTesteeRequest'));
    Atomics.store(this.#flag, 0, 0);
    this.#post({ kind: 'send', id, op, line: JSON.stringify({ id, op, ...params }), sync: true, ...(settle === undefined ? {} : { settle }) });
    // The port is the answer; the shared word only wakes this thread. A wake can be stale: the
    // worker may be preempted between setting the word for the previous answer and notifying,
    // and that late notify then ends this wait. So the port is read after every wake, and the
    // wait resumes until the answer is there or the bound has passed.
    const deadline = performance.now() + this.#boundMs;
    let received: FromWorker | undefined;
    for (;;) {
      received = receiveMessageOnPort(this.#syncPort)?.message as FromWorker | undefined;
      if (received !== undefined) break;
      const left = deadline - performance.now();
      if (left <= 0) {
        this.#fail(`the testee did not answer ${op} within ${this.#boundMs} ms; it must answer ${[...SYNC_OPS].join(', ')} at once, without waiting on a command`);
        throw new HarnessError(this.#fatal!);
      }
      Atomics.wait(this.#flag, 0, 0, left);
      Atomics.store(this.#flag, 0, 0);
    }
    if (received.kind === 'fatal') {
      this.#fail(received.message);
      throw new HarnessError(received.message);
    }
    if (received.kind !== 'line') throw new HarnessError('the link sent an unexpected message');
    return this.#settle(received.message, op);
  }

  /** Runs `handler` once the testee has ended. */
  onClose(handler: () => void): void {
    void this.#ended.then(handler);
  }

  /**
   * Ends the testee: a `bye` (the testee closes its sandboxes, runs its
   * teardown hook, and answers), then its standard input closed, then SIGTERM
   * and SIGKILL to its group after `graceMs`, and every process left that
   * carries its mark. Idempotent. Resolves with how the testee ended and the
   * error its `bye` was answered with, if any (a teardown hook that failed).
   */
  close(graceMs = 5_000): Promise<{ how: string; error?: unknown }> {
    this.#closed ??= 'the link to the testee is closed: the run is over';
    this.#closing ??= (async () => {
      let error: unknown;
      if (this.#fatal === undefined) {
        await Promise.race([
          this.request('bye', {}).catch((thrown: unknown) => {
            if (!(thrown instanceof HarnessError)) error = thrown;
          }),
          new Promise((resolve) => setTimeout(resolve, graceMs).unref()),
        ]);
      }
      this.#post({ kind: 'shutdown', graceMs });
      const how = await this.#ended;
      await this.#worker.terminate();
      this.#syncPort.close();
      return error === undefined ? { how } : { how, error };
    })();
    return this.#closing;
  }

  /** Keeps a request's async context, forgetting the oldest beyond {@link REMEMBERED_REQUESTS} (a Map iterates in insertion order). */
  #remember(id: string, resource: AsyncResource): void {
    this.#resources.set(id, resource);
    if (this.#resources.size > REMEMBERED_REQUESTS) this.#resources.delete(this.#resources.keys().next().value!);
  }

  /** Why no request may be sent now: the link's fault, or its close. */
  #refusal(): string | undefined {
    return this.#fatal ?? this.#closed;
  }

  #post(message: ToWorker): void {
    this.#worker.postMessage(message);
  }

  /** Decodes what the testee sent; a value of no form the protocol has is a fault of the link, not a case's failure. */
  #decode<T>(what: string, decode: () => T): T {
    try {
      return decode();
    } catch (error) {
      if (!(error instanceof MalformedValue)) throw error;
      this.#fail(`the testee sent ${what} with ${error.message}`);
      throw new HarnessError(this.#fatal!);
    }
  }

  #settle(message: Record<string, unknown>, op: string): unknown {
    if (message['ok'] === true) return this.#decode(`its answer to ${op}`, () => decodeValue(message['value'] ?? null));
    const error = message['error'] as WireError;
    if (typeof error.message !== 'string' || typeof error.name !== 'string') {
      this.#fail(`the testee answered ${op} with a malformed error: ${JSON.stringify(error).slice(0, 200)}`);
      throw new HarnessError(this.#fatal!);
    }
    throw this.#decode(`its error for ${op}`, () => decodeError(error, this.thrownBy));
  }

  #receive(message: Record<string, unknown>): void {
    if (message['fault'] !== undefined) return this.#raise(message);
    if (typeof message['call'] === 'string') {
      const id = message['call'];
      const callback = this.#callbacks.get(id);
      if (callback === undefined) return this.#fail(`the testee called an unknown callback ${JSON.stringify(id)}`);
      let args: unknown[];
      try {
        args = this.#decode(`a call of callback ${id}`, () => (message['args'] as WireValue[]).map((arg) => decodeValue(arg)));
      } catch {
        return; // the link failed, saying why
      }
      try {
        // In the case's own context, as in a direct run: what the callback sets off is charged to its case.
        callback.context.runInAsyncScope(callback.fn, undefined, ...args);
      } catch (error) {
        this.#thrown.set(id, error);
      }
      return;
    }
    const id = message['id'] as string;
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    try {
      // Before the caller resumes, so that what it reads next is what the adapter showed when the call settled.
      if (message['props'] !== undefined) pending.onProps?.(this.#decode(`the properties of its answer to ${pending.op}`, () => decodeValue(message['props'])));
      pending.resolve(this.#settle(message, pending.op));
    } catch (error) {
      pending.reject(error);
    }
  }

  /**
   * What the adapter raised in the testee where no caller could catch it is
   * raised again here, the same way, in the async context of the request
   * whose work raised it: the kit charges it to that request's case, as it
   * would in a direct run (ADR-0031).
   */
  #raise(message: Record<string, unknown>): void {
    let error: unknown;
    try {
      error = this.#decode('a fault', () => decodeError(message['fault'] as WireError, this.thrownBy));
    } catch {
      return; // the link failed, saying why
    }
    const requests = message['requests'] as string[];
    const resource = requests.map((id) => this.#resources.get(id)).find((r) => r !== undefined);
    const raise = (): void => {
      if (message['kind'] === 'unhandled rejection') void Promise.reject(error);
      else setImmediate(() => {
        throw error;
      });
    };
    if (resource === undefined) raise();
    else resource.runInAsyncScope(raise);
  }

  #fail(message: string): void {
    if (this.#fatal !== undefined) return;
    this.#fatal = message;
    for (const pending of this.#pending.values()) pending.reject(new HarnessError(message));
    this.#pending.clear();
    this.#onFatal?.(message);
  }
}
