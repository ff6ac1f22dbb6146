// The driver lifecycle as the runtime drives it (spec 1.2 §15, ADR-0041 and ADR-0014):
// the runtime owns every grace period, calls nothing but output() before the
// start is confirmed, and releases a driver exactly once. Time is driven by
// fake timers; nothing here waits for a real clock.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortError, SpawnFailed, TransportError } from '../src/errors.js';
import type { ExecResult } from '../src/schema/exec-result.js';
import { DEFAULT_GRACE_MS, DEFAULT_KILL_WAIT_MS, defineSandbox } from '../src/runtime/index.js';
import {
  deferred,
  flush,
  GRACE_MS,
  HIGH_WATER_MARK,
  KILL_WAIT_MS,
  scriptedSandbox,
  type ScriptedDriver,
} from './runtime-driver.js';

beforeEach(() => {
  // setImmediate stays real: flush() lets promise reactions run without time passing.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Settles to the value or the error, so a rejection is never left unhandled while time is advanced. */
function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

const dies = (on: readonly string[]) => (driver: ScriptedDriver) => {
  driver.onSignal = (signal) => {
    if (on.includes(signal)) queueMicrotask(() => driver.exit(0));
  };
};

describe('the runtime owns the grace period after the leader exits [SS-TEAR-10]', () => {
  it('sends SIGTERM and SIGCONT at once, and SIGKILL only once the grace period is over', async () => {
    const { sb, drivers } = scriptedSandbox(dies(['SIGKILL']));
    const proc = sb.stream(['leader']);
    await flush();
    const driver = drivers[0]!;
    const waiting = outcome(proc.wait());
    driver.events!.leaderExited({ exitCode: 0, signal: null });
    await flush();
    expect(driver.signals).toEqual(['SIGTERM', 'SIGCONT']);
    await vi.advanceTimersByTimeAsync(GRACE_MS / 2);
    expect(driver.signals).toEqual(['SIGTERM', 'SIGCONT']);
    expect(proc.exited).toBe(false);
    await vi.advanceTimersByTimeAsync(GRACE_MS / 2 + 1);
    expect(driver.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
    const { value } = await waiting;
    // The result is the leader's, reported by exit() once the tree is gone.
    expect(value).toMatchObject({ exitCode: 0, signal: null, timedOut: false });
    await proc[Symbol.asyncDispose]();
  });

  it('sends no SIGKILL when the tree goes on SIGTERM', async () => {
    const { sb, drivers } = scriptedSandbox(dies(['SIGTERM']));
    const proc = sb.stream(['leader']);
    await flush();
    drivers[0]!.events!.leaderExited({ exitCode: 3, signal: null });
    const result = await proc.wait();
    expect(result.exitCode).toBe(0);
    await vi.advanceTimersByTimeAsync(GRACE_MS + KILL_WAIT_MS);
    // The exit came before SIGCONT was due, so none was sent either.
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
  });

  it('sends nothing to a driver that reports exit alone', async () => {
    const { sb, drivers } = scriptedSandbox();
    const running = sb.run(['done']);
    await flush();
    drivers[0]!.exit(0);
    expect((await running).exitCode).toBe(0);
    await vi.advanceTimersByTimeAsync(GRACE_MS + KILL_WAIT_MS);
    expect(drivers[0]!.signals).toEqual([]);
  });

  it('settles with a TransportError naming the leader when no exit follows SIGKILL within killWaitMs', async () => {
    const { sb, drivers } = scriptedSandbox();
    const running = outcome(sb.run(['leader']));
    await flush();
    drivers[0]!.events!.leaderExited({ exitCode: 0, signal: null });
    await flush();
    await vi.advanceTimersByTimeAsync(GRACE_MS + 1);
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
    await vi.advanceTimersByTimeAsync(KILL_WAIT_MS / 2);
    expect(drivers[0]!.calls).not.toContain('release');
    await vi.advanceTimersByTimeAsync(KILL_WAIT_MS / 2 + 1);
    const { error } = await running;
    expect(error).toBeInstanceOf(TransportError);
    expect((error as Error).message).toMatch(/leader ended with code 0.*within 3000 ms of SIGKILL/);
    await flush();
    expect(drivers[0]!.count('release')).toBe(1);
  });

  it('the timeout and the signal no longer count once the leader exited, however long the wind-down', async () => {
    const { sb, drivers } = scriptedSandbox(dies(['SIGKILL']));
    const controller = new AbortController();
    const running = outcome(sb.run(['leader'], { timeout: 100, signal: controller.signal }));
    await flush();
    drivers[0]!.output('stdout', 'done');
    drivers[0]!.events!.leaderExited({ exitCode: 0, signal: null });
    await vi.advanceTimersByTimeAsync(200);
    controller.abort();
    await vi.advanceTimersByTimeAsync(GRACE_MS);
    const { value } = await running;
    expect(value).toMatchObject({ exitCode: 0, timedOut: false, stdoutText: 'done' });
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
  });

  it('a teardown already under way is not restarted by the leader exit', async () => {
    const { sb, drivers } = scriptedSandbox(dies(['SIGKILL']));
    const running = outcome(sb.run(['x'], { timeout: 10 }));
    await flush();
    await vi.advanceTimersByTimeAsync(10);
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT']);
    drivers[0]!.events!.leaderExited({ exitCode: null, signal: 'SIGTERM' });
    await flush();
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT']);
    await vi.advanceTimersByTimeAsync(GRACE_MS);
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
    expect((await running).value?.timedOut).toBe(true);
  });
});

describe('nothing but output() before the start is confirmed', () => {
  it('output may arrive before start() resolves; pause(), signal() and writeStdin() wait for it', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.startGate = deferred();
    });
    const proc = sb.stream(['x'], { stdin: 'pipe' });
    const driver = drivers[0]!;
    await flush();
    driver.output('stdout', 'y'.repeat(HIGH_WATER_MARK)); // reaches the mark: the runtime would pause
    const killing = outcome(proc.kill('SIGUSR1'));
    const writing = outcome(proc.stdin!.write('input'));
    const ending = outcome(proc.stdin!.end());
    await flush();
    expect(driver.calls).toEqual(['start']);
    driver.startGate!.resolve({ pid: 7 });
    await flush();
    expect(driver.calls.slice(0, 2)).toEqual(['start', 'pause']);
    expect(driver.calls).toEqual(expect.arrayContaining(['signal:SIGUSR1', 'write', 'closeStdin']));
    expect(await killing).toEqual({ value: undefined });
    expect(await writing).toEqual({ value: undefined });
    expect(await ending).toEqual({ value: undefined });
    driver.exit(0);
    await proc[Symbol.asyncDispose]();
  });

  it('a start that fails calls none of them, and wait() rejects as the start did', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.startGate = deferred();
    });
    const proc = sb.stream(['x'], { stdin: 'pipe' });
    const driver = drivers[0]!;
    const killing = outcome(proc.kill('SIGUSR1'));
    const writing = outcome(proc.stdin!.write('input'));
    driver.startGate!.reject(new SpawnFailed(['x'], 'ENOENT'));
    expect((await outcome(proc.wait())).error).toBeInstanceOf(SpawnFailed);
    expect(await killing).toEqual({ value: undefined });
    expect((await writing).error).toMatchObject({ code: 'STDIN_CLOSED' });
    await flush();
    expect(driver.calls).toEqual(['start', 'release']);
  });
});

describe('release() is called exactly once whenever start() was called, as the last call', () => {
  async function released(driver: ScriptedDriver): Promise<void> {
    await flush();
    expect(driver.count('release')).toBe(1);
    expect(driver.calls.at(-1)).toBe('release');
  }

  it('after the terminal exit, without disposal', async () => {
    const { sb, drivers } = scriptedSandbox();
    const proc = sb.stream(['x']);
    await flush();
    drivers[0]!.exit(0);
    await proc.wait();
    await released(drivers[0]!);
    await proc[Symbol.asyncDispose]();
    await released(drivers[0]!);
  });

  it('after the terminal fail()', async () => {
    const { sb, drivers } = scriptedSandbox();
    const running = outcome(sb.run(['x']));
    await flush();
    drivers[0]!.events!.fail(new Error('connection reset'));
    expect((await running).error).toBeInstanceOf(TransportError);
    await released(drivers[0]!);
  });

  it('after a rejected start (SpawnFailed)', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.startGate = deferred();
      driver.startGate.reject(new SpawnFailed(['x'], 'ENOENT'));
    });
    expect((await outcome(sb.run(['x']))).error).toBeInstanceOf(SpawnFailed);
    await released(drivers[0]!);
  });

  it('after a start whose outcome is unknown, which is never retried [SS-START-2]', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.startGate = deferred();
      driver.startGate.reject(new TransportError('the answer to the start request was lost'));
    });
    const proc = sb.stream(['x']);
    expect((await outcome(proc.started())).error).toBeInstanceOf(TransportError);
    expect((await outcome(proc.wait())).error).toBeInstanceOf(TransportError);
    await proc[Symbol.asyncDispose]().catch(() => undefined);
    await released(drivers[0]!);
    expect(drivers[0]!.count('start')).toBe(1);
  });

  it('after the runtime gave up with its own TransportError (no exit after SIGKILL)', async () => {
    const { sb, drivers } = scriptedSandbox();
    const proc = sb.stream(['x']);
    await flush();
    const disposing = outcome(proc[Symbol.asyncDispose]());
    await vi.advanceTimersByTimeAsync(GRACE_MS + KILL_WAIT_MS + 1);
    expect((await disposing).error).toBeInstanceOf(TransportError);
    await released(drivers[0]!);
    drivers[0]!.exit(0); // a late report changes nothing
    await released(drivers[0]!);
  });

  it('after the runtime gave up on a start never confirmed, while start() is still pending', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.startGate = deferred();
    });
    const proc = sb.stream(['x'], { timeout: 10, input: 'one-shot input' });
    drivers[0]!.output('stdout', 'y'.repeat(HIGH_WATER_MARK)); // the queue is full: a pause is due once started
    const started = outcome(proc.started());
    await vi.advanceTimersByTimeAsync(10 + GRACE_MS + KILL_WAIT_MS);
    expect((await started).error).toBeInstanceOf(TransportError);
    await released(drivers[0]!);
    drivers[0]!.startGate!.resolve({ pid: 9 }); // confirmed too late: nothing more is called
    await released(drivers[0]!);
    expect(drivers[0]!.calls).toEqual(['start', 'release']);
    expect((await outcome(proc.wait())).error).toBeInstanceOf(TransportError);
  });

  it('never when start() was not called (the signal had fired already)', async () => {
    const { sb, drivers } = scriptedSandbox();
    const proc = sb.stream(['x'], { signal: AbortSignal.abort() });
    expect((await outcome(proc.started())).error).toBeInstanceOf(AbortError);
    await proc[Symbol.asyncDispose]();
    expect(drivers[0]!.calls).toEqual([]);
  });
});

describe('Sandbox.termination [SS-TERM-1]', () => {
  it('states the settings the runtime uses', async () => {
    const { sb } = scriptedSandbox();
    expect(sb.termination).toEqual({ graceMs: GRACE_MS, killWaitMs: KILL_WAIT_MS });
    expect(Object.isFrozen(sb.termination)).toBe(true);
  });

  it('states the defaults when the backend sets none', () => {
    const sb = defineSandbox({
      name: 'defaults',
      capabilities: { streaming: true, stdin: false, 'resource-limits': false, user: false },
      native: undefined,
      createDriver: () => {
        throw new Error('not used');
      },
    });
    expect(sb.termination).toEqual({ graceMs: DEFAULT_GRACE_MS, killWaitMs: DEFAULT_KILL_WAIT_MS });
  });

  it('the SIGKILL comes graceMs after SIGTERM, as stated', async () => {
    const { sb, drivers } = scriptedSandbox(dies(['SIGKILL']));
    const proc = sb.stream(['x']);
    await flush();
    const disposing = proc[Symbol.asyncDispose]();
    await flush();
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT']);
    await vi.advanceTimersByTimeAsync(sb.termination!.graceMs / 2);
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT']);
    await vi.advanceTimersByTimeAsync(sb.termination!.graceMs / 2 + 1);
    await disposing;
    expect(drivers[0]!.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
    expect(((await proc.wait()) satisfies ExecResult).exitCode).toBe(0);
  });
});

describe('close() waits for the releases still under way of commands that ended before it', () => {
  /** A command that exited, whose driver's release() waits for a gate; and the close() that follows. */
  async function endedThenClosed(): Promise<{ driver: ScriptedDriver; isClosed: () => boolean; closing: Promise<unknown> }> {
    const { sb, drivers } = scriptedSandbox((driver) => (driver.releaseGate = deferred<void>()));
    const proc = sb.stream(['quick']);
    await flush();
    const driver = drivers[0]!;
    driver.exit(0);
    await proc.wait();
    await flush();
    expect(driver.calls.at(-1), 'release() was called').toBe('release');
    let closed = false;
    const closing = outcome(sb.close()).then(() => (closed = true));
    return { driver, isClosed: () => closed, closing };
  }

  it('close() resolves only once that release() ended', async () => {
    const { driver, isClosed, closing } = await endedThenClosed();
    await flush();
    expect(isClosed()).toBe(false);
    driver.releaseGate!.resolve();
    await closing;
    expect(isClosed()).toBe(true);
  });

  it('a release() that never ends holds close() for one grace period and kill wait, no longer', async () => {
    const { isClosed, closing } = await endedThenClosed();
    await vi.advanceTimersByTimeAsync(GRACE_MS + KILL_WAIT_MS - 1);
    expect(isClosed()).toBe(false);
    await vi.advanceTimersByTimeAsync(2);
    await closing;
    expect(isClosed()).toBe(true);
  });
});

describe('close() has one budget: the releases share what the terminations left of it [SS-TEAR-5]', () => {
  it('a command whose kill report comes late, and whose release() never ends, holds close() for one grace period and kill wait, not another kill wait', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => (driver.releaseGate = deferred<void>()));
    sb.stream(['ignores-sigterm']);
    await flush();
    const driver = drivers[0]!;
    let closed = false;
    const closing = outcome(sb.close()).then(() => (closed = true));
    await flush();
    expect(driver.signals).toEqual(['SIGTERM', 'SIGCONT']);
    await vi.advanceTimersByTimeAsync(GRACE_MS + 1);
    expect(driver.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
    // The backend reports the end just inside the kill wait: termination is confirmed.
    await vi.advanceTimersByTimeAsync(KILL_WAIT_MS - 10);
    driver.exit(null, 'SIGKILL');
    await flush();
    expect(driver.calls.at(-1), 'release() was called').toBe('release');
    expect(closed).toBe(false);
    // What is left of the one budget, and then close() resolves with the release still under way.
    await vi.advanceTimersByTimeAsync(10);
    await closing;
    expect(closed).toBe(true);
  });

  it('close() always waits for a termination to be confirmed, even past the budget', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      dies(['SIGKILL'])(driver);
      driver.startGate = deferred();
    });
    sb.stream(['slow-start']);
    // The start is confirmed only late in its own bound: the sequence runs from there.
    let closed = false;
    const closing = outcome(sb.close()).then(() => (closed = true));
    await vi.advanceTimersByTimeAsync(GRACE_MS + KILL_WAIT_MS - 5);
    const driver = drivers[0]!;
    driver.startGate!.resolve(driver.started);
    await vi.advanceTimersByTimeAsync(GRACE_MS - 1);
    expect(closed, 'not before SIGKILL was sent and the end reported').toBe(false);
    await vi.advanceTimersByTimeAsync(2);
    await closing;
    expect(driver.signals).toContain('SIGKILL');
    expect(closed).toBe(true);
  });
});
