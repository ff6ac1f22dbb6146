// A scripted in-memory driver for the shared Process runtime's tests: a
// command whose reaction to signals the test picks, the sandboxes built on
// it (one that behaves, one whose backend misbehaves in one way), and the
// clock and settling helpers those tests share.
import { setImmediate as tick } from 'node:timers/promises';
import { vi } from 'vitest';
import { SpawnFailed, StdinClosed } from '../src/errors.js';
import type { Signal } from '../src/options.js';
import type { CapabilityManifest } from '../src/schema/capability.js';
import type { StreamName } from '../src/schema/output-chunk.js';
import { defineSandbox, type DriverEvents, type ProcessDriver, type StartedProcess } from '../src/runtime/index.js';
import type { CommandSpec } from '../src/runtime/execution-plan.js';
import type { Sandbox } from '../src/contract.js';

export const GRACE_MS = 60;
export const KILL_WAIT_MS = 60;
export const HIGH_WATER_MARK = 16;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** How the scripted command reacts to signals. */
export type Reaction = 'dies' | 'ignores-term' | 'unresponsive' | 'dies-after-drain';

/** A backend command under the test's control. */
export class FakeDriver implements ProcessDriver {
  events: DriverEvents | undefined;
  readonly signals: Signal[] = [];
  readonly written: string[] = [];
  stdinEnded = false;
  started = 0;
  pauses = 0;
  resumes = 0;
  released = false;
  exited = false;

  constructor(
    readonly command: CommandSpec,
    private readonly reaction: Reaction,
    private readonly spawnError: boolean,
  ) {}

  async start(events: DriverEvents): Promise<StartedProcess> {
    this.started++;
    if (this.spawnError) throw new SpawnFailed(this.command.argv, 'ENOENT');
    this.events = events;
    return { pid: 4242 };
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    if (this.exited || this.stdinEnded) throw new StdinClosed('closed');
    await tick(); // lets later writes overtake, were they not serialised
    this.written.push(decoder.decode(data));
  }

  async closeStdin(): Promise<void> {
    this.stdinEnded = true;
  }

  async signal(signal: Signal): Promise<void> {
    this.signals.push(signal);
    if (this.exited) return;
    if (this.reaction === 'unresponsive') return;
    if (this.reaction === 'dies-after-drain') {
      if (this.deferredExit !== undefined) return; // already dead; only its pipe is unread
      // Like a child process: dead at once, but its exit is reported only
      // once the output still in its pipe was read.
      queueMicrotask(() => {
        if (this.paused) this.deferredExit = () => this.exit(null, signal);
        else this.exit(null, signal);
      });
      return;
    }
    if (signal === 'SIGKILL' || (signal === 'SIGTERM' && this.reaction === 'dies')) {
      queueMicrotask(() => this.exit(null, signal));
    }
  }

  private paused = false;
  private deferredExit: (() => void) | undefined;

  pause(): void {
    this.pauses++;
    this.paused = true;
  }

  resume(): void {
    this.resumes++;
    this.paused = false;
    const exit = this.deferredExit;
    this.deferredExit = undefined;
    exit?.();
  }

  async release(): Promise<void> {
    this.released = true;
  }

  output(stream: StreamName, text: string): void {
    this.events!.output(stream, encoder.encode(text));
  }

  exit(exitCode: number | null, signal: string | null = null): void {
    if (this.exited) return;
    this.exited = true;
    this.events!.exit({ exitCode, signal });
  }
}

export interface FakeOptions {
  readonly capabilities?: Partial<CapabilityManifest>;
  readonly reaction?: Reaction;
  readonly spawnError?: boolean;
}

export function fakeSandbox(options: FakeOptions = {}): { sb: Sandbox<FakeDriver[]>; drivers: FakeDriver[] } {
  const drivers: FakeDriver[] = [];
  const sb = defineSandbox({
    name: 'fake',
    capabilities: { streaming: true, stdin: true, 'resource-limits': true, user: true, ...options.capabilities },
    native: drivers,
    graceMs: GRACE_MS,
    killWaitMs: KILL_WAIT_MS,
    highWaterMark: HIGH_WATER_MARK,
    createDriver: (command) => {
      const driver = new FakeDriver(command, options.reaction ?? 'dies', options.spawnError ?? false);
      drivers.push(driver);
      return driver;
    },
  });
  sandboxes.push(sb);
  return { sb, drivers };
}

/** A driver whose backend misbehaves in one way. */
export function faultySandbox(fault: Partial<Pick<ProcessDriver, 'start' | 'signal' | 'writeStdin'>>): { sb: Sandbox; drivers: FakeDriver[] } {
  const drivers: FakeDriver[] = [];
  const sb = defineSandbox({
    name: 'faulty',
    capabilities: { streaming: true, stdin: true, 'resource-limits': false, user: false },
    native: undefined,
    graceMs: GRACE_MS,
    killWaitMs: KILL_WAIT_MS,
    highWaterMark: HIGH_WATER_MARK,
    createDriver: (command) => {
      const driver = new FakeDriver(command, 'dies', false);
      drivers.push(driver);
      return Object.assign(driver, fault);
    },
  });
  sandboxes.push(sb);
  return { sb, drivers };
}

const sandboxes: Sandbox[] = [];

/** After each test: closes the sandboxes it built, and puts back the real clock and every spied-on function. */
export async function resetFakes(): Promise<void> {
  await Promise.all(sandboxes.splice(0).map((sb) => sb.close()));
  vi.useRealTimers();
  vi.restoreAllMocks();
}

/**
 * The runtime's timers and clock under the test's control: time passes only
 * through vi.advanceTimersByTimeAsync(), so no verdict depends on the
 * machine's speed. setImmediate stays real, for settle().
 */
export function useFakeClock(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
}

/** Settles to the value or the error, so a rejection is never unhandled while time is advanced. */
export function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await tick();
}
