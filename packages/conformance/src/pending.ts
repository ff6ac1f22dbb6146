/**
 * Which calls into the adapter are still pending: a case that ran into its
 * time limit then says which call never settled (`wait() of [...] did not
 * settle`) instead of only that the adapter hung.
 *
 * The case gets a view of its sandbox through which every call is
 * recorded while it is pending: `run()`, `commands()` and `attach()`, and
 * on each Process `stream()` or `attach()` gives, `wait()`, `kill()`,
 * `started()`, `detach()`, disposal, the iterator's `next()` and
 * `return()`, and the standard-input writer's `write()` and `end()`. The
 * view forwards everything else unchanged, and calls each method on the
 * adapter's own object, so private state and getters work as before. It keeps no reference to a Process once its calls settled, so
 * a Process the case drops can still be garbage-collected.
 *
 * A `wait()`, `started()` or `kill()` still pending once the Process itself
 * reports the command exited (`exited: true`, so its result is known) has
 * no more to wait for: after a measured bound it is reported as hung
 * through `watch.hung`, and the case fails at once, naming it, instead of at
 * its time limit. Before that verdict the backend must show it still answers
 * (`watch.fresh`, a round trip measured then): on a loaded machine, or
 * behind a testee whose process is starved, the bound grows with it.
 */
import type { Process, Sandbox, StdinWriter } from '@sandstream/types';
import { ConformanceFailure } from './assert.js';
import type { ActiveWait } from './context.js';
import { watchHostLag } from './timing.js';

/** A call into the adapter that has not settled yet. */
export interface PendingCall {
  /** What was called, on what: "wait() of [\"sh\",\"-c\",\"echo hi\"]". */
  readonly call: string;
  /** When it was made (`performance.now()`). */
  readonly since: number;
}

/** The view of a sandbox that records pending calls, and the record. */
export interface CallTracker {
  /** The view the case uses. */
  readonly sandbox: Sandbox;
  /** The calls not settled yet, oldest first. */
  pending(): PendingCall[];
  /** When a call into the adapter last settled (`performance.now()`), if one has: the case was still making progress then. */
  lastSettled(): number | undefined;
  /** The adapter's own sandbox behind a view from this tracker, or `value` itself. */
  unwrap<T>(value: T): T;
  /** Stops watching pending calls (the case ended). */
  stop(): void;
}

/** How the tracker judges a call hung after the command's end. */
export interface HangWatch {
  /**
   * How long a call may stay pending once the Process reports the command exited: a measured
   * bound, and no less than five times `freshMs`, a round trip measured just before, if given.
   */
  bound(freshMs?: number): Promise<number>;
  /**
   * A round trip to the backend measured now, in ms, or undefined when none came back within
   * `withinMs` (the backend does not answer: the call is judged on the first bound).
   */
  fresh?(withinMs: number): Promise<number | undefined>;
  /** Called once, with the failure naming the first call found hung. */
  hung(failure: ConformanceFailure): void;
}

/** An argv as a failure message shows it: each argument cut to 40 characters. */
export function showArgv(argv: readonly unknown[]): string {
  const cut = (arg: unknown): unknown => (typeof arg === 'string' && arg.length > 40 ? `${arg.slice(0, 37)}...` : arg);
  try {
    return JSON.stringify(Array.isArray(argv) ? argv.map(cut) : argv) ?? String(argv);
  } catch {
    return String(argv);
  }
}

const SETTLING: Record<string, (of: string) => string> = {
  wait: (of) => `wait() of ${of}`,
  kill: (of) => `kill() of ${of}`,
  started: (of) => `started() of ${of}`,
};

const POLL_MS = 25;

/** Resolves after `ms` without keeping the process alive. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function reportsExited(proc: Process): boolean {
  try {
    return proc.exited === true;
  } catch {
    return false;
  }
}

/** Wraps `sandbox` so that its pending calls are known, and those that hang after the command's end reported to `watch`. */
export function trackCalls(sandbox: Sandbox, watch?: HangWatch): CallTracker {
  const pending = new Set<PendingCall>();
  let stopped = false;
  let reported = false;
  let lastSettled: number | undefined;

  /** Watches `call` on `proc`, pending until `settled()`: once the Process reports its end, it has a bound to settle. */
  const watchAfterExit = async (call: string, proc: Process, settled: () => boolean): Promise<void> => {
    if (watch === undefined) return;
    while (!stopped && !settled() && !reportsExited(proc)) await pause(POLL_MS);
    if (stopped || settled()) return;
    const exitedAt = performance.now();
    const lag = watchHostLag();
    try {
      let within = await watch.bound();
      // A stall of the kit's own process delays the settling it sees, so it is added.
      while (!stopped && !settled() && performance.now() - exitedAt < within) await pause(POLL_MS);
      // Absence is proved only once the backend answered: a round trip measured now extends the
      // bound to five of them where the backend has slowed since the case began.
      const freshMs = stopped || settled() ? undefined : await watch.fresh?.(Math.max(2_000, 4 * within));
      if (freshMs !== undefined) within = Math.max(within, await watch.bound(freshMs));
      while (!stopped && !settled() && performance.now() - exitedAt < within) await pause(POLL_MS);
      const stalled = lag.stop();
      const until = performance.now() + stalled;
      while (!stopped && !settled() && performance.now() < until) await pause(POLL_MS);
      if (stopped || settled() || reported) return;
      reported = true;
      watch.hung(
        new ConformanceFailure(
          `${call} did not settle, though the Process reported the command exited (exited: true) ${Math.round(performance.now() - exitedAt)} ms before, so its result was known`,
        ),
      );
    } finally {
      lag.stop();
    }
  };
  const views = new WeakMap<object, object>();
  const originals = new WeakMap<object, object>();

  /** `value` (a call's result); while it is a pending promise, `call` is listed. */
  const track = <T>(call: string, value: T, after?: Process): T => {
    if (typeof (value as { then?: unknown } | null)?.then !== 'function') return value;
    const entry: PendingCall = { call, since: performance.now() };
    pending.add(entry);
    const settle = (): void => {
      pending.delete(entry);
      lastSettled = performance.now();
    };
    Promise.resolve(value).then(settle, settle);
    // A bound that cannot be measured (the case ended meanwhile) leaves the call to the case's limit.
    if (after !== undefined) watchAfterExit(call, after, () => !pending.has(entry)).catch(() => undefined);
    return value;
  };

  /**
   * A proxy of `target` whose methods run on `target` itself; `wrap` replaces
   * chosen methods, `replace` chosen other values.
   */
  const view = <T extends object>(
    target: T,
    wrap: (key: PropertyKey, method: (...args: unknown[]) => unknown) => ((...args: unknown[]) => unknown) | undefined,
    replace: (key: PropertyKey, value: unknown) => unknown = (_, value) => value,
  ): T => {
    const known = views.get(target);
    if (known !== undefined) return known as T;
    const cache = new Map<PropertyKey, { method: unknown; bound: unknown }>();
    const proxy = new Proxy(target, {
      get(object, key) {
        const value: unknown = Reflect.get(object, key, object);
        if (typeof value !== 'function') return replace(key, value);
        const cached = cache.get(key);
        if (cached?.method === value) return cached.bound;
        const method = value as (...args: unknown[]) => unknown;
        const bound = wrap(key, method) ?? ((...args: unknown[]) => method.apply(object, args));
        cache.set(key, { method: value, bound });
        return bound;
      },
    });
    views.set(target, proxy);
    originals.set(proxy, target);
    return proxy;
  };

  const writerView = (writer: StdinWriter, of: string): StdinWriter =>
    view(writer, (key, method) => {
      if (key !== 'write' && key !== 'end') return undefined;
      return (...args) => track(`stdin.${String(key)}() of ${of}`, method.apply(writer, args));
    });

  const iteratorView = <I extends object>(iterator: I, of: string): I =>
    view(iterator, (key, method) => {
      if (key === Symbol.asyncIterator) return () => iteratorView(iterator, of);
      if (key !== 'next' && key !== 'return' && key !== 'throw') return undefined;
      const what = key === 'next' ? `the next chunk of ${of} (iterator.next())` : `iterator.${key}() of ${of}`;
      return (...args) => track(what, method.apply(iterator, args));
    });

  const processView = (proc: Process, of: string): Process =>
    view(
      proc,
      (key, method) => {
        if (key === Symbol.asyncDispose) return () => track(`disposal of ${of}`, method.apply(proc, []));
        if (key === 'detach') return () => track(`detach() of ${of}`, method.apply(proc, []));
        if (key === Symbol.asyncIterator) {
          return () => {
            const iterator = method.apply(proc, []);
            return typeof iterator === 'object' && iterator !== null ? iteratorView(iterator, of) : iterator;
          };
        }
        const describe = typeof key === 'string' ? SETTLING[key] : undefined;
        if (describe === undefined) return undefined;
        return (...args) => track(describe(of), method.apply(proc, args), proc);
      },
      // The writer, when there is one, is a view too: its writes are calls of their own.
      (key, value) => (key === 'stdin' && typeof value === 'object' && value !== null ? writerView(value as StdinWriter, of) : value),
    );

  const sandboxView = view(sandbox, (key, method) => {
    if (key === 'run') return (...args) => track(`run() of ${showArgv(args[0] as unknown[])}`, method.apply(sandbox, args));
    if (key === 'close') return () => track('Sandbox.close()', method.apply(sandbox, []));
    if (key === 'commands') return () => track('commands()', method.apply(sandbox, []));
    if (key === 'attach') {
      return (...args) => {
        const call = `attach(${showArgv([args[0]]).slice(1, -1)})`;
        const attached = method.apply(sandbox, args);
        if (typeof (attached as { then?: unknown } | null)?.then !== 'function') return attached;
        // The attached Process's own calls are tracked as a stream()'s are.
        const viewed = Promise.resolve(attached).then((proc) => (typeof proc === 'object' && proc !== null ? processView(proc as Process, `the Process of ${call}`) : proc));
        return track(call, viewed);
      };
    }
    if (key !== 'stream') return undefined;
    return (...args) => {
      const proc = method.apply(sandbox, args);
      return typeof proc === 'object' && proc !== null ? processView(proc as Process, `stream(${showArgv(args[0] as unknown[])})`) : proc;
    };
  });

  return {
    sandbox: sandboxView,
    pending: () => [...pending].sort((a, b) => a.since - b.since),
    lastSettled: () => lastSettled,
    unwrap: <T>(value: T): T => ((typeof value === 'object' && value !== null ? originals.get(value) : undefined) ?? value) as T,
    stop: () => void (stopped = true),
  };
}

/**
 * What a case that ran into its limit was waiting for, for its failure
 * message: the oldest pending calls, or that none was pending; and the
 * bounded waits it was in, whose own bound had not passed yet (a slow
 * backend's, scaled by its latency, may be longer than the case's limit).
 */
export function describePending(calls: readonly PendingCall[], now = performance.now(), waits: readonly ActiveWait[] = []): string {
  const seconds = (since: number): string => ((now - since) / 1000).toFixed(1);
  const shown = calls.slice(0, 3).map((c) => `${c.call} did not settle (called ${seconds(c.since)} s before)`);
  const more = calls.length > 3 ? `, and ${calls.length - 3} more call${calls.length === 4 ? '' : 's'}` : '';
  const pending = calls.length === 0 ? 'no call to the adapter was pending (the case was waiting on something the adapter should have delivered)' : `${shown.join('; ')}${more}`;
  const within = waits.map((w) => `a wait begun ${seconds(w.since)} s before, bounded at ${w.withinMs} ms, that fails with "${w.what}"`);
  return within.length === 0 ? pending : `${pending}; the case was in ${within.join(', within ')}`;
}
