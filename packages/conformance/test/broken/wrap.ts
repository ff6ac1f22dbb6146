/**
 * Wrappers that delegate to a real Sandbox, Process, StdinWriter or driver,
 * replacing exactly the parts a defect needs.
 */
import {
  createExecResult,
  type CapabilityManifest,
  type ExecResult,
  type OutputChunk,
  type Process,
  type RunOptions,
  type Sandbox,
  type Signal,
  type StdinWriter,
  type StreamOptions,
} from '@sandstream/types';
import { isPlainObject, type DriverEvents, type ProcessDriver } from '@sandstream/types/runtime';

export type ChunkIterator = AsyncIterator<OutputChunk, undefined>;

/** What a defective Process replaces; everything else is delegated. */
export interface ProcessDefects {
  /** Replaces `[Symbol.asyncIterator]()`. */
  iterator?(inner: Process): ChunkIterator;
  wait?(inner: Process): Promise<ExecResult>;
  dispose?(inner: Process): Promise<void>;
  kill?(inner: Process, signal: Signal): Promise<void>;
  /** Replaces the `exited` getter. */
  exited?(inner: Process): boolean;
  /** Wraps the writer when there is one. */
  stdin?(inner: StdinWriter): StdinWriter;
  /** Replaces `resize()` (spec 1.5). */
  resize?(inner: Process, cols: number, rows: number): Promise<void>;
}

/** A Process delegating to a real one, except where `defects` says otherwise. */
export class WrappedProcess implements Process {
  readonly #inner: Process;
  readonly #defects: ProcessDefects;
  readonly #stdin: StdinWriter | null;

  constructor(inner: Process, defects: ProcessDefects) {
    this.#inner = inner;
    this.#defects = defects;
    this.#stdin = inner.stdin !== null && defects.stdin !== undefined ? defects.stdin(inner.stdin) : inner.stdin;
  }

  get id(): string {
    return this.#inner.id;
  }
  get argv(): readonly string[] {
    return this.#inner.argv;
  }
  get pid(): number | undefined {
    return this.#inner.pid;
  }
  get stdin(): StdinWriter | null {
    return this.#stdin;
  }
  get exited(): boolean {
    return this.#defects.exited?.(this.#inner) ?? this.#inner.exited;
  }
  get commandId(): string | undefined {
    return (this.#inner as { commandId?: string }).commandId;
  }
  started(): Promise<void> {
    return (this.#inner as { started?: () => Promise<void> }).started?.() ?? Promise.resolve();
  }
  [Symbol.asyncIterator](): ChunkIterator {
    return this.#defects.iterator?.(this.#inner) ?? this.#inner[Symbol.asyncIterator]();
  }
  wait(): Promise<ExecResult> {
    return this.#defects.wait?.(this.#inner) ?? this.#inner.wait();
  }
  kill(signal?: Signal): Promise<void> {
    return this.#defects.kill?.(this.#inner, signal ?? 'SIGTERM') ?? this.#inner.kill(signal);
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.#defects.dispose?.(this.#inner) ?? this.#inner[Symbol.asyncDispose]();
  }
  resize(cols: number, rows: number): Promise<void> {
    return this.#defects.resize?.(this.#inner, cols, rows) ?? this.#inner.resize!(cols, rows);
  }
}

/** A StdinWriter delegating to `inner`, except for the calls `defects` replaces. */
export function wrapStdin(inner: StdinWriter, defects: Partial<Pick<StdinWriter, 'write' | 'end'>>): StdinWriter {
  return {
    get closed() {
      return inner.closed;
    },
    write: defects.write ?? ((data) => inner.write(data)),
    end: defects.end ?? (() => inner.end()),
  };
}

/** What a defective Sandbox replaces; everything else is delegated. */
export interface SandboxDefects {
  /** Replaces the inner sandbox's name. */
  name?: string;
  run?(inner: Sandbox, argv: readonly string[], options: RunOptions | undefined): Promise<ExecResult>;
  stream?(inner: Sandbox, argv: readonly string[], options: StreamOptions | undefined): Process;
  /** Applied to every Process that `stream()` returns. */
  process?: ProcessDefects;
  close?(inner: Sandbox): Promise<void>;
  /** Read on every access of `sandbox.capabilities`. */
  capabilities?(inner: Sandbox): Readonly<CapabilityManifest>;
  /** Read on every access of `sandbox.termination`. */
  termination?(inner: Sandbox): Sandbox['termination'];
}

/** A Sandbox delegating to a real one, except where `defects` says otherwise. */
export function wrapSandbox(inner: Sandbox, defects: SandboxDefects): Sandbox {
  const sandbox: Sandbox = {
    get name() {
      return defects.name ?? inner.name;
    },
    get capabilities() {
      return defects.capabilities?.(inner) ?? inner.capabilities;
    },
    get native() {
      return inner.native;
    },
    get termination() {
      return (defects.termination?.(inner) ?? inner.termination) as NonNullable<Sandbox["termination"]>;
    },
    run(argv, options) {
      return defects.run?.(inner, argv, options) ?? inner.run(argv, options);
    },
    // One implementation for both overloads: a background Process passes through as the inner sandbox gave it.
    stream: ((argv: readonly string[], options?: StreamOptions): Process => {
      const proc = defects.stream?.(inner, argv, options) ?? inner.stream(argv, options);
      return defects.process === undefined ? proc : new WrappedProcess(proc, defects.process);
    }) as Sandbox['stream'],
    close() {
      return defects.close?.(inner) ?? inner.close();
    },
    [Symbol.asyncDispose]() {
      return sandbox.close();
    },
  };
  return sandbox;
}

/**
 * An iterator over `inner` whose chunks pass through `transform`. The
 * inner iterator is taken at once, so a second iteration still throws
 * synchronously; leaving the outer loop early closes the inner one (the
 * generator's `for await` does), so teardown is unchanged.
 */
export function transformChunks(
  inner: Process,
  transform: (source: AsyncIterable<OutputChunk>) => AsyncGenerator<OutputChunk, undefined, undefined>,
): ChunkIterator {
  const source = inner[Symbol.asyncIterator]();
  return transform({ [Symbol.asyncIterator]: () => source });
}

/** A copy of `result` with some fields changed. */
export function alterResult(result: ExecResult, changes: Partial<Omit<ExecResult, 'stdoutText' | 'stderrText'>>): ExecResult {
  return createExecResult({ ...result, ...changes });
}

/** `options` without `key`; malformed options are passed on untouched, for the adapter to refuse. */
export function omit<T>(options: T, ...keys: string[]): T {
  if (!isPlainObject(options)) return options;
  const copy: Record<string, unknown> = { ...options };
  for (const key of keys) delete copy[key];
  return copy as T;
}

/** Defects of an adapter that ignores the options `keys` of both run() and stream(). */
export function ignoringOptions(...keys: string[]): SandboxDefects {
  return {
    run: (inner, argv, options) => inner.run(argv, omit(options, ...keys)),
    stream: (inner, argv, options) => inner.stream(argv, omit(options, ...keys)),
  };
}

/** `options` keeping only `keys`; malformed options are passed on untouched. */
export function pick<T>(options: T, keys: ReadonlySet<string>): T {
  if (!isPlainObject(options)) return options;
  return Object.fromEntries(Object.entries(options).filter(([key]) => keys.has(key))) as T;
}

/** A driver delegating to `driver`, except for `overrides`. */
export function delegateDriver(driver: ProcessDriver, overrides: Partial<ProcessDriver> = {}): ProcessDriver {
  return {
    start: (events) => driver.start(events),
    writeStdin: (data) => driver.writeStdin(data),
    closeStdin: () => driver.closeStdin(),
    signal: (signal) => driver.signal(signal),
    pause: () => driver.pause?.(),
    resume: () => driver.resume?.(),
    release: () => driver.release?.() ?? Promise.resolve(),
    ...(driver.resize === undefined ? {} : { resize: (cols: number, rows: number) => driver.resize!(cols, rows) }),
    ...overrides,
  };
}

/** A driver whose events pass through `map` on their way to the runtime. */
export function mapDriverEvents(driver: ProcessDriver, map: (events: DriverEvents) => DriverEvents): ProcessDriver {
  return delegateDriver(driver, { start: (events) => driver.start(map(events)) });
}

/**
 * A driver whose events pass through `map`, with the pid its start
 * reported; events after a forged terminal event are dropped, as the
 * runtime expects nothing after it.
 */
export function withPid(driver: ProcessDriver, map: (events: DriverEvents, pid: () => number | undefined) => DriverEvents): ProcessDriver {
  let pid: number | undefined;
  return delegateDriver(driver, {
    async start(events) {
      const started = await driver.start(map(events, () => pid));
      pid = started.pid;
      return started;
    },
  });
}

export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // gone already
  }
}

/** Events after the first terminal one are swallowed. */
export function terminalOnce(events: DriverEvents): DriverEvents & { ended(): boolean; end(status: Parameters<DriverEvents['exit']>[0]): void } {
  let ended = false;
  return {
    output: (stream, data) => {
      if (!ended) events.output(stream, data);
    },
    leaderExited: (status) => {
      if (!ended) events.leaderExited(status);
    },
    exit: (status) => {
      if (ended) return;
      ended = true;
      events.exit(status);
    },
    fail: (error) => {
      if (ended) return;
      ended = true;
      events.fail(error);
    },
    ended: () => ended,
    end(status) {
      if (ended) return;
      ended = true;
      events.exit(status);
    },
  };
}

/** Resolves after `ms`. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
