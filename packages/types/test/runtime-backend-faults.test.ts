// The shared Process runtime (`@sandstream/types/runtime`) against a scripted
// in-memory driver: the semantics every adapter built on defineSandbox() gets.
// This file: a backend whose start, signal or write fails or never answers.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StdinClosed, TransportError } from '../src/errors.js';
import { GRACE_MS, KILL_WAIT_MS, faultySandbox, outcome, resetFakes, settle, useFakeClock } from './runtime-fake-sandbox.js';

afterEach(resetFakes);

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
