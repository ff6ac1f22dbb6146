import { InvalidArgument, InvalidState } from '../errors.js';
import { SIGNALS, type Signal } from '../options.js';
import type { Process, StdinWriter } from '../contract.js';
import type { ExecResult } from '../schema/exec-result.js';
import type { OutputChunk } from '../schema/output-chunk.js';
import type { ProcessCore } from './process-core.js';

const encoder = new TextEncoder();

/**
 * The `stdin` writer of a Process. It holds its Process, so a caller still
 * writing keeps the command alive even without the Process itself; the core
 * holds neither.
 */
class CoreStdin implements StdinWriter {
  readonly #owner: Process;
  constructor(
    private readonly core: ProcessCore,
    owner: Process,
  ) {
    this.#owner = owner;
  }
  get closed(): boolean {
    return this.core.stdin.closed;
  }
  write(data: Uint8Array | string): Promise<void> {
    if (typeof data === 'string') return this.core.stdin.write(encoder.encode(data));
    if (!(data instanceof Uint8Array)) {
      return Promise.reject(new InvalidArgument('data', 'must be a Uint8Array or a string'));
    }
    return this.core.stdin.write(data);
  }
  end(): Promise<void> {
    keepAlive(this.#owner);
    return this.core.stdin.end();
  }
}

/**
 * Keeps a Process reachable from whatever holds the value passed along: the
 * iterator a `for await` loop holds, or a `wait()` reaction while it is
 * pending. A Process in use that way is not leaked, even when the caller
 * kept no reference to the Process itself.
 */
function keepAlive(_owner: Process): void {}

/** The iterator of a Process. Holds its Process, so a running loop keeps it alive. */
class CoreIterator implements AsyncIterator<OutputChunk, undefined> {
  readonly #core: ProcessCore;
  readonly #owner: Process;
  constructor(core: ProcessCore, owner: Process) {
    this.#core = core;
    this.#owner = owner;
  }
  next(): Promise<IteratorResult<OutputChunk, undefined>> {
    return this.#core.next();
  }
  /** Leaving a for-await loop early is leaving the command's scope. */
  async return(): Promise<IteratorResult<OutputChunk, undefined>> {
    keepAlive(this.#owner);
    await this.#core.dispose();
    return { value: undefined, done: true };
  }
}

/**
 * Safety net for Processes dropped without being disposed: the public
 * object is collectable because the core never points back at it, except
 * transiently through a pending `wait()` or a suspended `for await` over it
 * (both mean the caller is still using the command).
 */
const leaked = new FinalizationRegistry<ProcessCore>((core) => {
  if (core.settled) return;
  process.emitWarning(
    `A Sandstream Process for ${JSON.stringify(core.plan.command.argv)} was garbage-collected while still running; ` +
      'it is being terminated. Use `await using` or call wait() so teardown happens when you mean it to.',
    { code: 'SANDSTREAM_PROCESS_LEAKED' },
  );
  core.dispose().catch(() => undefined);
});

/**
 * The public face of a {@link ProcessCore}. Deliberately holds nothing the
 * core needs, so that dropping it is observable by the finalizer.
 */
export class ProcessHandle implements Process {
  readonly #core: ProcessCore;
  readonly #stdin: StdinWriter | null;
  #iterated = false;

  constructor(core: ProcessCore) {
    this.#core = core;
    this.#stdin = core.plan.interactive ? new CoreStdin(core, this) : null;
    // No unregister on settle: a reaction on the core's promises would point
    // back at this object and keep it alive. The finalizer checks instead.
    leaked.register(this, core, this);
  }

  get id(): string {
    return this.#core.id;
  }
  get argv(): readonly string[] {
    return this.#core.plan.command.argv;
  }
  get pid(): number | undefined {
    return this.#core.pid;
  }
  get commandId(): string | undefined {
    return this.#core.commandId;
  }
  get stdin(): StdinWriter | null {
    return this.#stdin;
  }
  get exited(): boolean {
    return this.#core.settled;
  }

  [Symbol.asyncIterator](): AsyncIterator<OutputChunk, undefined> {
    if (this.#iterated) throw new InvalidState('a Process can be iterated only once');
    this.#iterated = true;
    this.#core.attachReader();
    return new CoreIterator(this.#core, this);
  }

  started(): Promise<void> {
    return this.#core.started();
  }

  wait(): Promise<ExecResult> {
    // The reaction holds this Process until the result is in: a caller
    // awaiting `sb.stream(argv).wait()` keeps no other reference to it.
    return this.#core.result().finally(() => keepAlive(this));
  }

  kill(signal: Signal = 'SIGTERM'): Promise<void> {
    if (!SIGNALS.includes(signal)) {
      return Promise.reject(new InvalidArgument('signal', `must be one of ${SIGNALS.join(', ')}`));
    }
    return this.#core.kill(signal);
  }

  resize(cols: number, rows: number): Promise<void> {
    return this.#core.resize(cols, rows);
  }

  [Symbol.asyncDispose](): Promise<void> {
    leaked.unregister(this);
    return this.#core.dispose();
  }

  get [Symbol.toStringTag](): string {
    return 'Process';
  }
}
