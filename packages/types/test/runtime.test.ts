// The shared Process runtime (`@sandstream/types/runtime`) against a scripted
// in-memory driver: the semantics every adapter built on defineSandbox() gets.
import { setImmediate as tick } from 'node:timers/promises';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AbortError,
  CallbackFailed,
  CapabilityNotSupported,
  InvalidArgument,
  InvalidState,
  SandboxClosed,
  SpawnFailed,
  StdinClosed,
  TransportError,
} from '../src/errors.js';
import type { Signal } from '../src/options.js';
import type { CapabilityManifest } from '../src/schema/capability.js';
import type { OutputChunk, StreamName } from '../src/schema/output-chunk.js';
import { encodeExecResult, validatorFor } from '../src/validators.js';
import { defineSandbox, type DriverEvents, type ProcessDriver, type StartedProcess } from '../src/runtime/index.js';
import type { CommandSpec } from '../src/runtime/execution-plan.js';
import type { Process, Sandbox } from '../src/contract.js';

const GRACE_MS = 60;
const KILL_WAIT_MS = 60;
const HIGH_WATER_MARK = 16;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** How the scripted command reacts to signals. */
type Reaction = 'dies' | 'ignores-term' | 'unresponsive' | 'dies-after-drain';

/** A backend command under the test's control. */
class FakeDriver implements ProcessDriver {
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

interface FakeOptions {
  readonly capabilities?: Partial<CapabilityManifest>;
  readonly reaction?: Reaction;
  readonly spawnError?: boolean;
}

function fakeSandbox(options: FakeOptions = {}): { sb: Sandbox<FakeDriver[]>; drivers: FakeDriver[] } {
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

const sandboxes: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((sb) => sb.close()));
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/**
 * The runtime's timers and clock under the test's control: time passes only
 * through vi.advanceTimersByTimeAsync(), so no verdict depends on the
 * machine's speed. setImmediate stays real, for settle().
 */
function useFakeClock(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
}

/** Settles to the value or the error, so a rejection is never unhandled while time is advanced. */
function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

function text(chunks: readonly OutputChunk[], stream: StreamName): string {
  return chunks
    .filter((chunk) => chunk.stream === stream)
    .map((chunk) => decoder.decode(chunk.data))
    .join('');
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await tick();
}

describe('stream() [SS-STREAM-1, SS-START-1]', () => {
  it('returns a non-thenable Process synchronously, the start already requested', () => {
    const { sb, drivers } = fakeSandbox();
    const proc = sb.stream(['server']);
    expect(drivers).toHaveLength(1);
    expect(drivers[0]!.started).toBe(1);
    expect('then' in proc).toBe(false);
    expect(proc.argv).toEqual(['server']);
    expect(proc.exited).toBe(false);
  });

  it('reports the pid once the start is confirmed', async () => {
    const { sb } = fakeSandbox();
    const proc = sb.stream(['server']);
    await settle();
    expect(proc.pid).toBe(4242);
  });

  it('rejects iteration, wait() and run() with SpawnFailed when the start fails', async () => {
    const { sb } = fakeSandbox({ spawnError: true });
    const proc = sb.stream(['nope']);
    await expect(proc.wait()).rejects.toBeInstanceOf(SpawnFailed);
    await expect(
      (async () => {
        for await (const _ of proc) void _;
      })(),
    ).rejects.toBeInstanceOf(SpawnFailed);
    await expect(sb.run(['nope'])).rejects.toBeInstanceOf(SpawnFailed);
    await proc[Symbol.asyncDispose]();
  });
});

describe('iteration [SS-STREAM-2, SS-ORDER-1, SS-ORDER-2]', () => {
  it('delivers tagged chunks in order and ends when the command exits', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cmd']);
    const driver = drivers[0]!;
    await settle();
    driver.output('stdout', 'one ');
    driver.output('stderr', 'warn\n');
    driver.output('stdout', 'two\n');
    driver.exit(0);
    const chunks: OutputChunk[] = [];
    for await (const chunk of proc) chunks.push(chunk);
    expect(text(chunks, 'stdout')).toBe('one two\n');
    expect(text(chunks, 'stderr')).toBe('warn\n');
    expect(chunks.map((chunk) => chunk.stream)).toEqual(['stdout', 'stderr', 'stdout']);
    const result = await proc.wait();
    expect(result).toMatchObject({ exitCode: 0, signal: null, streamed: true, timedOut: false });
    expect(result.stdout.byteLength + result.stderr.byteLength).toBe(0);
    expect(validatorFor('ExecResult')(encodeExecResult(result))).toBe(true);
  });

  it('can be iterated only once', async () => {
    const { sb } = fakeSandbox();
    await using proc = sb.stream(['cmd']);
    proc[Symbol.asyncIterator]();
    expect(() => proc[Symbol.asyncIterator]()).toThrow(InvalidState);
  });
});

describe('wait() [SS-WAIT-1, SS-WAIT-2]', () => {
  it('drains and discards unread output, resumes a paused driver, and is idempotent', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cmd']);
    const driver = drivers[0]!;
    await settle();
    driver.output('stdout', 'x'.repeat(HIGH_WATER_MARK)); // nobody reads: the driver is paused
    expect(driver.pauses).toBe(1);
    const waiting = proc.wait();
    expect(driver.resumes).toBe(1);
    driver.output('stdout', 'more');
    driver.exit(3);
    const first = await waiting;
    expect(first).toMatchObject({ exitCode: 3, streamed: true });
    expect(await proc.wait()).toBe(first);
    const rest: OutputChunk[] = [];
    for await (const chunk of proc) rest.push(chunk);
    expect(rest).toEqual([]);
  });

  it('does not terminate the command', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cmd']);
    const waiting = proc.wait();
    await settle();
    expect(drivers[0]!.signals).toEqual([]);
    drivers[0]!.exit(0);
    await waiting;
  });
});

describe('backpressure', () => {
  it('pauses the driver at the high-water mark and resumes once the reader caught up', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['yes']);
    const driver = drivers[0]!;
    await settle();
    for (let i = 0; i < 4; i++) driver.output('stdout', 'yyyy');
    expect(driver.pauses).toBe(1);
    const iterator = proc[Symbol.asyncIterator]();
    await iterator.next(); // 12 bytes left: above half the mark
    expect(driver.resumes).toBe(0);
    await iterator.next(); // 8 bytes left: half the mark
    expect(driver.resumes).toBe(1);
    driver.output('stdout', 'yyyy');
    expect(driver.pauses).toBe(1);
  });
});

describe('teardown', () => {
  it('disposal terminates a running command and resolves only once it is gone [SS-TEAR-1]', async () => {
    const { sb, drivers } = fakeSandbox();
    const proc = sb.stream(['server']);
    await settle();
    await proc[Symbol.asyncDispose]();
    const driver = drivers[0]!;
    expect(driver.signals).toEqual(['SIGTERM']);
    expect(driver.exited).toBe(true);
    expect(driver.released).toBe(true);
    expect(proc.exited).toBe(true);
    expect(await proc.wait()).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
  });

  it('leaving a loop by break terminates the command before the loop is left [SS-TEAR-2]', async () => {
    const { sb, drivers } = fakeSandbox();
    setImmediate(() => drivers[0]!.output('stdout', 'line\n'));
    for await (const chunk of sb.stream(['tail', '-f'])) {
      expect(chunk.stream).toBe('stdout');
      expect(drivers[0]!.signals).toEqual([]);
      break;
    }
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
    expect(drivers[0]!.exited).toBe(true);
  });

  it('leaving a loop by a throw terminates the command before the catch runs [SS-TEAR-2]', async () => {
    const { sb, drivers } = fakeSandbox();
    const proc = sb.stream(['tail', '-f']);
    await settle();
    drivers[0]!.output('stdout', 'line\n');
    await expect(
      (async () => {
        for await (const _ of proc) throw new Error('stop');
      })(),
    ).rejects.toThrow('stop');
    expect(drivers[0]!.exited).toBe(true);
  });

  it('sends SIGKILL only after the grace period to a command that ignores SIGTERM [SS-TEAR-7]', async () => {
    useFakeClock();
    const { sb, drivers } = fakeSandbox({ reaction: 'ignores-term' });
    const proc = sb.stream(['stubborn']);
    await settle();
    const disposing = proc[Symbol.asyncDispose]();
    await settle();
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT']);
    await vi.advanceTimersByTimeAsync(GRACE_MS - 1);
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT']);
    await vi.advanceTimersByTimeAsync(1);
    await disposing;
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
    expect((await proc.wait()).signal).toBe('SIGKILL');
  });

  it('fails with TransportError when no end is reported after SIGKILL', async () => {
    useFakeClock();
    const { sb, drivers } = fakeSandbox({ reaction: 'unresponsive' });
    const proc = sb.stream(['lost']);
    await settle();
    const disposing = outcome(proc[Symbol.asyncDispose]());
    await vi.advanceTimersByTimeAsync(GRACE_MS + KILL_WAIT_MS - 1);
    expect(proc.exited).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect((await disposing).error).toBeInstanceOf(TransportError);
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
    await expect(proc.wait()).rejects.toBeInstanceOf(TransportError);
  });

  it('abort terminates and rejects with AbortError carrying the partial result [SS-TEAR-3]', async () => {
    const { sb, drivers } = fakeSandbox();
    const controller = new AbortController();
    const reason = new Error('user cancelled');
    const running = sb.run(['build'], { signal: controller.signal });
    await settle();
    drivers[0]!.output('stdout', 'step 1\n');
    controller.abort(reason);
    const error = await running.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(AbortError);
    const abort = error as AbortError;
    expect(abort.cause).toBe(reason);
    expect(abort.result?.stdoutText).toBe('step 1\n');
    expect(abort.result?.streamed).toBe(false);
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
  });

  it('ends iteration with AbortError after delivering what arrived before [SS-TEAR-3]', async () => {
    const { sb, drivers } = fakeSandbox();
    const controller = new AbortController();
    await using proc = sb.stream(['build'], { signal: controller.signal });
    await settle();
    drivers[0]!.output('stdout', 'before\n');
    controller.abort();
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of proc) seen.push(decoder.decode(chunk.data));
      })(),
    ).rejects.toBeInstanceOf(AbortError);
    expect(seen).toEqual(['before\n']);
    const error = await proc.wait().catch((caught: unknown) => caught);
    expect((error as AbortError).result?.streamed).toBe(true);
  });

  it('starts nothing for an already-aborted signal [SS-TEAR-3]', async () => {
    const { sb, drivers } = fakeSandbox();
    const signal = AbortSignal.abort();
    await expect(sb.run(['x'], { signal })).rejects.toBeInstanceOf(AbortError);
    await expect(sb.run(['x'], { signal })).rejects.toMatchObject({ result: undefined });
    const proc = sb.stream(['x'], { signal });
    await expect(proc.wait()).rejects.toBeInstanceOf(AbortError);
    // Nothing ran, so neither call has a result to report.
    await expect(proc.wait()).rejects.toMatchObject({ result: undefined });
    expect(drivers.every((driver) => driver.started === 0)).toBe(true);
    await proc[Symbol.asyncDispose]();
  });

  it('completes teardown after the caller aborted [SS-TEAR-8]', async () => {
    const { sb, drivers } = fakeSandbox({ reaction: 'ignores-term' });
    const controller = new AbortController();
    const proc = sb.stream(['x'], { signal: controller.signal });
    await settle();
    controller.abort();
    await proc[Symbol.asyncDispose]();
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
    expect(drivers[0]!.exited).toBe(true);
  });

  it('a reader behind at the timeout gets every chunk and the timed-out result, not a TransportError [SS-TEAR-4]', async () => {
    useFakeClock();
    const { sb, drivers } = fakeSandbox({ reaction: 'dies-after-drain' });
    await using proc = sb.stream(['x'], { timeout: 10 });
    await settle();
    for (let i = 0; i < 8; i++) drivers[0]!.output('stdout', `chunk-${i};`);
    expect(drivers[0]!.pauses).toBeGreaterThan(0);
    // Longer than the grace period and the kill wait together: the reader is slow, not the link broken.
    await vi.advanceTimersByTimeAsync((GRACE_MS + KILL_WAIT_MS) * 3);
    expect(proc.exited).toBe(false);
    let text = '';
    for await (const chunk of proc) text += decoder.decode(chunk.data);
    expect(text).toBe(Array.from({ length: 8 }, (_, i) => `chunk-${i};`).join(''));
    const result = await proc.wait();
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe('SIGTERM');
  });

  it('timeout terminates and keeps the output produced before [SS-TEAR-4]', async () => {
    useFakeClock();
    const { sb, drivers } = fakeSandbox();
    const running = sb.run(['slow'], { timeout: 30 });
    await settle();
    drivers[0]!.output('stdout', 'partial');
    await vi.advanceTimersByTimeAsync(29);
    expect(drivers[0]!.signals).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    const result = await running;
    expect(result).toMatchObject({ timedOut: true, signal: 'SIGTERM', exitCode: null });
    expect(result.stdoutText).toBe('partial');
    expect(result.durationMs).toBe(30);
  });

  it('close() terminates processes never iterated nor disposed, then refuses work [SS-TEAR-5]', async () => {
    const { sb, drivers } = fakeSandbox();
    sb.stream(['a']);
    sb.stream(['b']);
    const running = sb.run(['c']);
    await settle();
    await sb.close();
    expect(drivers.map((driver) => driver.exited)).toEqual([true, true, true]);
    expect((await running).signal).toBe('SIGTERM');
    expect(() => sb.stream(['d'])).toThrow(SandboxClosed);
    await expect(sb.run(['d'])).rejects.toBeInstanceOf(SandboxClosed);
    expect(drivers).toHaveLength(3);
  });

  it('kill() sends one signal and is a no-op once exited', async () => {
    const { sb, drivers } = fakeSandbox({ reaction: 'ignores-term' });
    await using proc = sb.stream(['x']);
    await proc.kill('SIGUSR1');
    expect(drivers[0]!.signals).toEqual(['SIGUSR1']);
    await expect(proc.kill('SIGBOGUS' as Signal)).rejects.toBeInstanceOf(InvalidArgument);
    drivers[0]!.exit(0);
    await proc.kill('SIGTERM');
    expect(drivers[0]!.signals).toEqual(['SIGUSR1']);
  });
});

describe('capabilities [SS-CAP-1, SS-CAP-2]', () => {
  it.each<[Partial<CapabilityManifest>, () => unknown, string]>([
    [{ streaming: false }, () => undefined, 'streaming'],
    [{ stdin: false }, () => ({ stdin: 'pipe' }), 'stdin'],
    [{ stdin: false }, () => ({ input: 'x' }), 'stdin'],
    [{ 'resource-limits': false }, () => ({ limits: { cpuSeconds: 1 } }), 'resource-limits'],
    [{ user: false }, () => ({ user: 'nobody' }), 'user'],
  ])('stream() without %o throws before creating a driver', (capabilities, options, capability) => {
    const { sb, drivers } = fakeSandbox({ capabilities });
    let caught: unknown;
    try {
      sb.stream(['x'], options() as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CapabilityNotSupported);
    expect((caught as CapabilityNotSupported).capability).toBe(capability);
    expect(drivers).toHaveLength(0);
  });

  it('run() rejects without starting anything', async () => {
    const { sb, drivers } = fakeSandbox({ capabilities: { stdin: false } });
    const running = sb.run(['cat'], { input: 'x' });
    expect(running).toBeInstanceOf(Promise);
    await expect(running).rejects.toBeInstanceOf(CapabilityNotSupported);
    expect(drivers).toHaveLength(0);
  });

  it('freezes the manifest [SS-CAP-3]', () => {
    const { sb } = fakeSandbox();
    expect(Object.isFrozen(sb.capabilities)).toBe(true);
    expect(validatorFor('CapabilityManifest')(sb.capabilities)).toBe(true);
  });
});

describe('run() output [SS-CAPOUT-1, SS-ONOUT-1, SS-RESULT-1]', () => {
  it('keeps maxOutputBytes per stream, flags truncation, and delivers everything to onOutput', async () => {
    const { sb, drivers } = fakeSandbox();
    const seen: string[] = [];
    const running = sb.run(['x'], {
      maxOutputBytes: 4,
      onOutput: (chunk) => seen.push(`${chunk.stream}:${decoder.decode(chunk.data)}`),
    });
    await settle();
    const driver = drivers[0]!;
    driver.output('stdout', 'abc');
    driver.output('stdout', 'def');
    driver.output('stderr', 'err!');
    driver.output('stdout', 'gh');
    driver.exit(0);
    const result = await running;
    expect(result.stdoutText).toBe('abcd');
    expect(result.stdoutTruncated).toBe(true);
    expect(result.stderrText).toBe('err!');
    expect(result.stderrTruncated).toBe(false);
    expect(result.streamed).toBe(false);
    expect(seen).toEqual(['stdout:abc', 'stdout:def', 'stderr:err!', 'stdout:gh']);
  });

  it('terminates the command and rejects with CallbackFailed when onOutput throws', async () => {
    const { sb, drivers } = fakeSandbox();
    const boom = new Error('boom');
    let calls = 0;
    const running = sb.run(['x'], {
      onOutput: () => {
        calls++;
        throw boom;
      },
    });
    await settle();
    drivers[0]!.output('stdout', 'first');
    drivers[0]!.output('stdout', 'second');
    const error = await running.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CallbackFailed);
    expect((error as CallbackFailed).cause).toBe(boom);
    expect((error as CallbackFailed).result?.stdoutText).toBe('firstsecond');
    expect(calls).toBe(1);
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
  });
});

describe('standard input [SS-STDIN-1, SS-STDIN-2]', () => {
  it('delivers writes in call order, then end-of-file; rejects writes after exit', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    const writer = proc.stdin!;
    await Promise.all([writer.write('a'), writer.write(encoder.encode('b')), writer.write('c')]);
    await writer.end();
    // Writes queued together may share one driver call; the bytes and their order are what counts.
    expect(drivers[0]!.written.join('')).toBe('abc');
    expect(drivers[0]!.stdinEnded).toBe(true);
    expect(writer.closed).toBe(true);
    await expect(writer.write('d')).rejects.toBeInstanceOf(StdinClosed);
    drivers[0]!.exit(0);
    await proc.wait();
  });

  it('rejects a write after the command exited', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    await settle();
    drivers[0]!.exit(0);
    await proc.wait();
    expect(proc.stdin!.closed).toBe(true);
    await expect(proc.stdin!.write('late')).rejects.toBeInstanceOf(StdinClosed);
  });

  it('writes one-shot input then closes standard input', async () => {
    const { sb, drivers } = fakeSandbox();
    const running = sb.run(['cat'], { input: 'hello' });
    await settle();
    expect(drivers[0]!.written).toEqual(['hello']);
    expect(drivers[0]!.stdinEnded).toBe(true);
    drivers[0]!.exit(0);
    await running;
  });

  it('gives no writer without stdin: "pipe"', async () => {
    const { sb } = fakeSandbox();
    await using proc = sb.stream(['cat']);
    expect(proc.stdin).toBeNull();
  });
});

describe('garbage-collection safety net [SS-TEAR-9]', () => {
  // The safety net runs from a FinalizationRegistry, which only a garbage
  // collection triggers; the only deterministic way to cause one is V8's gc(),
  // which --expose-gc makes available. The flag is set in this test worker
  // alone (vitest runs each file in its own worker), and it changes nothing
  // but the presence of that function.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;

  function watchWarnings(): string[] {
    const warnings: string[] = [];
    vi.spyOn(process, 'emitWarning').mockImplementation(((message: string | Error, options?: { code?: string }) => {
      warnings.push(`${options?.code ?? ''} ${String(message)}`);
    }) as typeof process.emitWarning);
    return warnings;
  }

  async function collectGarbage(until: () => boolean): Promise<void> {
    for (let attempt = 0; attempt < 20 && !until(); attempt++) {
      gc();
      await tick();
    }
  }

  it('terminates a dropped, running Process and warns naming the command', async () => {
    const warnings = watchWarnings();
    const { sb, drivers } = fakeSandbox();
    ((): void => {
      sb.stream(['forgotten', '--flag']);
    })();
    await settle();
    await collectGarbage(() => drivers[0]!.exited);
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^SANDSTREAM_PROCESS_LEAKED /);
    expect(warnings[0]).toContain('["forgotten","--flag"]');
  });

  it('stays silent for a Process that was dropped after it exited', async () => {
    const warnings = watchWarnings();
    const { sb, drivers } = fakeSandbox();
    // Proof that the collection happened: a finalizer of our own on the same object.
    let collected = false;
    const sentinel = new FinalizationRegistry<undefined>(() => {
      collected = true;
    });
    ((): void => {
      sentinel.register(sb.stream(['done']), undefined);
    })();
    await settle();
    drivers[0]!.exit(0);
    await collectGarbage(() => collected);
    expect(collected).toBe(true);
    await settle(); // the runtime's finalizer of the same collection has run too
    expect(warnings).toEqual([]);
    expect(drivers[0]!.signals).toEqual([]);
  });

  // In a bare `for await (const c of sb.stream(...))` the loop holds only the
  // iterator. An iterator that did not reference its Process would let the
  // Process be collected mid-loop, and the safety net would then terminate
  // the command and end the loop early, silently.
  it('never fires during a bare for-await loop, whose only reference is the iterator', async () => {
    const warnings = watchWarnings();
    const { sb, drivers } = fakeSandbox();
    const seen: string[] = [];
    setImmediate(() => drivers[0]!.output('stdout', '0'));
    for await (const chunk of sb.stream(['counter'])) {
      seen.push(decoder.decode(chunk.data));
      await collectGarbage(() => drivers[0]!.exited);
      if (seen.length < 5) drivers[0]!.output('stdout', String(seen.length));
      else drivers[0]!.exit(0);
    }
    expect(seen).toEqual(['0', '1', '2', '3', '4']);
    expect(warnings).toEqual([]);
  });
});

describe('concurrency [SS-CONC-1]', () => {
  it('keeps the chunks and results of concurrent processes apart', async () => {
    const { sb, drivers } = fakeSandbox();
    await using a = sb.stream(['a']);
    await using b = sb.stream(['b']);
    await settle();
    drivers[0]!.output('stdout', 'from a');
    drivers[1]!.output('stdout', 'from b');
    drivers[1]!.exit(2);
    drivers[0]!.exit(1);
    const read = async (proc: Process): Promise<string> => {
      let out = '';
      for await (const chunk of proc) out += decoder.decode(chunk.data);
      return out;
    };
    expect(await Promise.all([read(a), read(b)])).toEqual(['from a', 'from b']);
    expect((await a.wait()).exitCode).toBe(1);
    expect((await b.wait()).exitCode).toBe(2);
  });
});

/** A driver whose backend misbehaves in one way. */
function faultySandbox(fault: Partial<Pick<ProcessDriver, 'start' | 'signal' | 'writeStdin'>>): { sb: Sandbox; drivers: FakeDriver[] } {
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

describe('backend faults', () => {
  it('a start that is never confirmed ends in TransportError within the teardown budget, and close() completes', async () => {
    useFakeClock();
    const { sb } = faultySandbox({ start: () => new Promise<never>(() => undefined) });
    const proc = sb.stream(['x'], { timeout: 10 });
    const waiting = outcome(proc.wait());
    await vi.advanceTimersByTimeAsync(10 + GRACE_MS + KILL_WAIT_MS - 1);
    expect(proc.exited).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect((await waiting).error).toBeInstanceOf(TransportError);
    await expect(proc[Symbol.asyncDispose]()).rejects.toBeInstanceOf(TransportError);
    await expect(sb.close()).resolves.toBeUndefined();
  });

  it('a start failure the contract does not define for starting becomes TransportError', async () => {
    const { sb } = faultySandbox({ start: () => Promise.reject(new StdinClosed('nonsense')) });
    await expect(sb.run(['x'])).rejects.toBeInstanceOf(TransportError);
    await expect(sb.run(['x'])).rejects.toMatchObject({ cause: expect.any(StdinClosed) });
  });

  it('kill() and write() report a failing backend as TransportError carrying the cause', async () => {
    const boom = new Error('EHOSTUNREACH');
    const { sb } = faultySandbox({
      signal: () => Promise.reject(boom),
      writeStdin: () => Promise.reject(boom),
    });
    const proc = sb.stream(['x'], { stdin: 'pipe' });
    await settle();
    await expect(proc.kill('SIGUSR1')).rejects.toMatchObject({ code: 'TRANSPORT', cause: boom });
    await expect(proc.stdin!.write('data')).rejects.toMatchObject({ code: 'TRANSPORT', cause: boom });
  });
});

describe('kill() and release', () => {
  it('kill() sends exactly the one signal asked for [SS-KILL-1]', async () => {
    const { sb, drivers } = fakeSandbox({ reaction: 'ignores-term' });
    await using proc = sb.stream(['x']);
    await settle();
    await proc.kill('SIGINT');
    await proc.kill();
    expect(drivers[0]!.signals).toEqual(['SIGINT', 'SIGTERM']);
    drivers[0]!.exit(0);
  });

  it('releases the driver once the command ended by itself, without disposal', async () => {
    const { sb, drivers } = fakeSandbox();
    const proc = sb.stream(['x']);
    await settle();
    drivers[0]!.output('stdout', 'done');
    drivers[0]!.exit(0);
    for await (const chunk of proc) void chunk;
    await proc.wait();
    await settle();
    expect(drivers[0]!.released).toBe(true);
  });
});

describe('bounded teardown and shared signals', () => {
  it('a signal the backend never confirms does not hang timeout, disposal or close()', async () => {
    useFakeClock();
    const { sb } = faultySandbox({ signal: () => new Promise<never>(() => undefined) });
    const timed = outcome(sb.run(['x'], { timeout: 10 }));
    // The timeout, then SIGTERM unconfirmed for the grace period, then SIGKILL unconfirmed for the kill wait.
    await vi.advanceTimersByTimeAsync(10 + GRACE_MS + KILL_WAIT_MS + 10);
    expect((await timed).error).toBeInstanceOf(TransportError);
    const proc = sb.stream(['x']);
    await settle();
    const killing = outcome(proc.kill('SIGUSR1'));
    await vi.advanceTimersByTimeAsync(KILL_WAIT_MS);
    expect((await killing).error).toMatchObject({ code: 'TRANSPORT' });
    const disposing = outcome(proc[Symbol.asyncDispose]());
    await vi.advanceTimersByTimeAsync(GRACE_MS + KILL_WAIT_MS + 10);
    expect((await disposing).error).toBeInstanceOf(TransportError);
    await expect(sb.close()).resolves.toBeUndefined();
  });

  it('many commands sharing one AbortSignal attach one listener, and none once they are done', async () => {
    const { getEventListeners } = await import('node:events');
    const warn = vi.spyOn(process, 'emitWarning');
    const { sb, drivers } = fakeSandbox();
    const controller = new AbortController();
    const runs = Array.from({ length: 12 }, () => sb.run(['x'], { signal: controller.signal }));
    await settle();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    drivers.forEach((driver) => driver.exit(0));
    await Promise.all(runs);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const again = Array.from({ length: 3 }, () => sb.run(['x'], { signal: controller.signal }));
    await settle();
    controller.abort();
    for (const run of again) await expect(run).rejects.toBeInstanceOf(AbortError);
    expect(warn).not.toHaveBeenCalled();
  });
});
