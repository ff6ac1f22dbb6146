import { describe, expect, it } from 'vitest';
import { FaultError, FaultQueue, reached, RequestRecorder, type Fault } from '../../src/emulator/index.js';

type Route = 'Start' | 'SendInput' | 'logs';
const recorder = new RequestRecorder<Route>();
const request = (route: Route, body?: unknown) => recorder.record({ method: 'POST', path: `/x/${route}`, route, body });

describe('FaultQueue', () => {
  it('strikes the first matching request by default, once', () => {
    const faults = new FaultQueue<Route>();
    faults.inject({ kind: 'reset', route: 'Start' });
    expect(faults.take(request('SendInput'), ['reset'])).toBeUndefined();
    expect(faults.take(request('Start'), ['reset'])).toMatchObject({ kind: 'reset' });
    expect(faults.take(request('Start'), ['reset'])).toBeUndefined();
    expect(faults.pending()).toEqual([]);
  });

  it('strikes the nth matching request and the `times - 1` after it, counting each request once', () => {
    const faults = new FaultQueue<Route>();
    faults.inject({ kind: 'http-status', status: 503, route: 'Start', nth: 2, times: 2 });
    const first = request('Start');
    // Asked twice about one request (before and after it took effect): counted once.
    expect(faults.take(first, ['http-status'])).toBeUndefined();
    expect(faults.take(first, ['http-status'])).toBeUndefined();
    expect(faults.take(request('Start'), ['http-status'])).toMatchObject({ status: 503 });
    expect(faults.take(request('Start'), ['http-status'])).toMatchObject({ status: 503 });
    expect(faults.take(request('Start'), ['http-status'])).toBeUndefined();
  });

  it('asks only about the kinds a point of a request can take, and `accept` narrows them', () => {
    const faults = new FaultQueue<Route>();
    faults.inject({ kind: 'http-status', status: 502, served: true });
    const r = request('SendInput');
    expect(faults.take(r, ['reset'])).toBeUndefined();
    expect(faults.take(r, ['http-status'], (f) => f.served !== true)).toBeUndefined();
    expect(faults.pending()).toHaveLength(1);
    expect(faults.take(r, ['http-status'], (f) => f.served === true)).toMatchObject({ status: 502 });
  });

  it('targets by route, method, path and a test on the recorded request, all of them', () => {
    const faults = new FaultQueue<Route>();
    faults.inject({ kind: 'delay', ms: 5, route: ['Start', 'logs'], method: 'POST', path: /Start$/, match: (r) => (r.body as { n?: number })?.n === 2 });
    expect(faults.take(request('Start', { n: 1 }), ['delay'])).toBeUndefined();
    expect(faults.take(request('logs', { n: 2 }), ['delay'])).toBeUndefined();
    expect(faults.take(request('Start', { n: 2 }), ['delay'])).toMatchObject({ ms: 5 });
  });

  it('with forMs, strikes every matching request of the window, then none', () => {
    let now = 1_000;
    const faults = new FaultQueue<Route>(() => now);
    faults.inject({ kind: 'http-status', status: 429, retryAfterSeconds: 1, forMs: 100 });
    expect(faults.take(request('Start'), ['http-status'])).toBeDefined();
    now += 99;
    expect(faults.take(request('Start'), ['http-status'])).toBeDefined();
    now += 1;
    expect(faults.take(request('Start'), ['http-status'])).toBeUndefined();
    expect(faults.pending()).toEqual([]);
  });

  it('refuses a fault that could never strike as written', () => {
    const faults = new FaultQueue();
    expect(() => faults.inject({ kind: 'status', status: 503 } as unknown as Fault)).toThrow(FaultError);
    expect(() => faults.inject({ kind: 'http-status', status: 200 })).toThrow(/400-599/);
    expect(() => faults.inject({ kind: 'reset', nth: 0 })).toThrow(/nth/);
    expect(() => faults.inject({ kind: 'delay', ms: -1 })).toThrow(/ms/);
    expect(() => faults.inject({ kind: 'reset', forMs: 0 })).toThrow(/forMs/);
  });
});

describe('reached', () => {
  it('reads the three forms of a stream point', () => {
    expect(reached(2, 2, 0, false)).toBe(true);
    expect(reached(2, 1, 0, false)).toBe(false);
    expect(reached('before-end', 5, 0, false)).toBe(false);
    expect(reached('before-end', 5, 0, true)).toBe(true);
    expect(reached({ bytes: 10 }, 1, 8, false, 2)).toBe(false);
    expect(reached({ bytes: 10 }, 1, 8, false, 3)).toBe(true);
  });
});

describe('RequestRecorder', () => {
  it('records method, path, route and timing, and counts per route even when it keeps nothing', () => {
    const kept = new RequestRecorder<Route>();
    const r = kept.record({ method: 'GET', path: '/logs', route: 'logs' });
    expect(r).toMatchObject({ method: 'GET', path: '/logs', route: 'logs', status: 0, endedAt: undefined });
    kept.answered(r, 200);
    expect(r.status).toBe(200);
    expect(r.endedAt).toBeGreaterThanOrEqual(r.at);
    kept.record({ method: 'GET', path: '/nowhere', route: undefined });
    expect(kept.counts()).toEqual({ logs: 1, 'GET /nowhere': 1 });

    const lean = new RequestRecorder<Route>({ keep: false });
    lean.record({ method: 'POST', path: '/x', route: 'Start' });
    expect(lean.requests).toHaveLength(0);
    expect(lean.total()).toBe(1);
    lean.reset();
    expect(lean.total()).toBe(0);
  });

  it('holds each request for the latency it is set to, and refuses a latency that is not one', async () => {
    const slow = new RequestRecorder({ latencyMs: 30 });
    const started = performance.now();
    await slow.admit();
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
    const aborted = new AbortController();
    aborted.abort();
    slow.latencyMs = 60_000;
    await slow.admit(aborted.signal);
    expect(() => (slow.latencyMs = -1)).toThrow(RangeError);
    expect(() => new RequestRecorder({ latencyMs: Number.NaN })).toThrow(RangeError);
  });
});
