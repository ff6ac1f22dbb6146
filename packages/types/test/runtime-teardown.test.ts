// The shared Process runtime (`@sandstream/types/runtime`) against a scripted
// in-memory driver: the semantics every adapter built on defineSandbox() gets.
// This file: teardown (disposal, loops left, grace, abort, timeout,
// close()), kill() and release, and teardown bounded when the backend
// never confirms.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AbortError, InvalidArgument, SandboxClosed, TransportError } from '../src/errors.js';
import type { Signal } from '../src/options.js';
import type { Process } from '../src/contract.js';
import { GRACE_MS, KILL_WAIT_MS, fakeSandbox, faultySandbox, outcome, resetFakes, settle, useFakeClock, type FakeDriver } from './runtime-fake-sandbox.js';

const decoder = new TextDecoder();

afterEach(resetFakes);

/** From SIGTERM's confirmation (SIGCONT sent too): SIGKILL not a tick before the grace period, then at once, and the command's end by it. */
async function expectKilledAfterGrace(driver: FakeDriver, disposing: Promise<void>, proc: Process): Promise<void> {
  expect(driver.signals).toEqual(['SIGTERM', 'SIGCONT']);
  await vi.advanceTimersByTimeAsync(GRACE_MS - 1);
  expect(driver.signals).toEqual(['SIGTERM', 'SIGCONT']);
  await vi.advanceTimersByTimeAsync(1);
  await disposing;
  expect(driver.signals).toEqual(['SIGTERM', 'SIGCONT', 'SIGKILL']);
  expect((await proc.wait()).signal).toBe('SIGKILL');
}

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
    await expectKilledAfterGrace(drivers[0]!, disposing, proc);
  });

  it('counts the grace period from the confirmation of SIGTERM, not from the request: a slow delivery does not shorten it [SS-TEAR-7]', async () => {
    useFakeClock();
    const DELIVERY_MS = 40;
    // A backend that takes DELIVERY_MS to deliver SIGTERM (a remote helper), whose command ignores it.
    const { sb, drivers } = faultySandbox({
      async signal(this: FakeDriver, signal: Signal) {
        this.signals.push(signal);
        if (signal === 'SIGTERM') await new Promise((resolve) => setTimeout(resolve, DELIVERY_MS));
        if (signal === 'SIGKILL') queueMicrotask(() => this.exit(null, 'SIGKILL'));
      },
    });
    const proc = sb.stream(['stubborn']);
    await settle();
    const disposing = proc[Symbol.asyncDispose]();
    await vi.advanceTimersByTimeAsync(DELIVERY_MS);
    await expectKilledAfterGrace(drivers[0]!, disposing, proc);
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
