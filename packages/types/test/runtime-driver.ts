// A driver under a test's full control, for the runtime's lifecycle tests:
// every call the runtime makes is logged, and nothing happens on its own
// unless the test asks for it.
import { setImmediate as tick } from 'node:timers/promises';
import type { Signal } from '../src/options.js';
import type { StreamName } from '../src/schema/output-chunk.js';
import { defineSandbox, type CommandSpec, type DriverEvents, type ProcessDriver, type SandboxBackend, type StartedProcess } from '../src/runtime/index.js';
import type { Sandbox } from '../src/contract.js';

const encoder = new TextEncoder();

/** A promise with its settle functions. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets pending promise reactions run (a few turns of the event loop, no timers). */
export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await tick();
}

/**
 * A scripted driver. `start()` resolves with `started` (or waits for
 * `startGate` when set); `signal()` records the signal and calls
 * `onSignal`; `writeStdin()` records the bytes and runs `onWrite`.
 */
export class ScriptedDriver implements ProcessDriver {
  events: DriverEvents | undefined;
  /** What the runtime asked this driver to start. */
  command: CommandSpec | undefined;
  /** Every call the runtime made, in order: `start`, `signal:SIGTERM`, `write`, `release`, ... */
  readonly calls: string[] = [];
  readonly written: string[] = [];
  startGate: Deferred<StartedProcess> | undefined;
  started: StartedProcess = { pid: 4242 };
  onSignal: ((signal: Signal) => void) | undefined;
  onWrite: ((text: string) => Promise<void> | void) | undefined;
  onCloseStdin: (() => void) | undefined;
  /** Runs inside `resize()`: a rejection becomes the driver's. */
  onResize: ((cols: number, rows: number) => Promise<void> | void) | undefined;
  /** When set, `release()` ends only once it resolves (an adapter's cleanup requests, say). */
  releaseGate: Deferred<void> | undefined;
  ended = false;

  async start(events: DriverEvents): Promise<StartedProcess> {
    this.calls.push('start');
    this.events = events;
    return this.startGate === undefined ? this.started : this.startGate.promise;
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    this.calls.push('write');
    const text = new TextDecoder().decode(data);
    await this.onWrite?.(text);
    this.written.push(text);
  }

  async closeStdin(): Promise<void> {
    this.calls.push('closeStdin');
    this.onCloseStdin?.();
  }

  async resize(cols: number, rows: number): Promise<void> {
    this.calls.push(`resize:${cols}x${rows}`);
    await this.onResize?.(cols, rows);
  }

  async signal(signal: Signal): Promise<void> {
    this.calls.push(`signal:${signal}`);
    this.onSignal?.(signal);
  }

  pause(): void {
    this.calls.push('pause');
  }

  resume(): void {
    this.calls.push('resume');
  }

  async release(): Promise<void> {
    this.calls.push('release');
    await this.releaseGate?.promise;
  }

  output(stream: StreamName, text: string): void {
    this.events!.output(stream, encoder.encode(text));
  }

  exit(exitCode: number | null, signal: string | null = null): void {
    if (this.ended) return;
    this.ended = true;
    this.events!.exit({ exitCode, signal });
  }

  /** The signals sent, in order. */
  get signals(): string[] {
    return this.calls.filter((call) => call.startsWith('signal:')).map((call) => call.slice('signal:'.length));
  }

  count(call: string): number {
    return this.calls.filter((each) => each === call).length;
  }
}

export interface ScriptedSandbox {
  readonly sb: Sandbox;
  readonly drivers: ScriptedDriver[];
}

export const GRACE_MS = 1_000;
export const KILL_WAIT_MS = 3_000;
export const HIGH_WATER_MARK = 64;

/** A sandbox whose every command gets a fresh {@link ScriptedDriver}, prepared by `prepare`. */
export function scriptedSandbox(
  prepare: (driver: ScriptedDriver) => void = () => undefined,
  backend: Partial<Pick<SandboxBackend, 'capabilities' | 'replayBytes' | 'background'>> = {},
): ScriptedSandbox {
  const drivers: ScriptedDriver[] = [];
  const sb = defineSandbox({
    name: 'scripted',
    capabilities: { streaming: true, stdin: true, 'resource-limits': false, user: false },
    ...backend,
    native: undefined,
    graceMs: GRACE_MS,
    killWaitMs: KILL_WAIT_MS,
    highWaterMark: HIGH_WATER_MARK,
    createDriver: (command) => {
      const driver = new ScriptedDriver();
      driver.command = command;
      prepare(driver);
      drivers.push(driver);
      return driver;
    },
  });
  return { sb, drivers };
}
