/**
 * The background endings are not checks that cannot fail: against a local
 * sandbox whose attach miscounts its skip, delivers a chunk twice, whose
 * attached Processes detach instead of ending their command when disposed,
 * or whose close() leaves its background commands running, the run reports
 * it, naming the process and the seed.
 */
import { describe, expect, it } from 'vitest';
import type { AttachOptions, BackgroundProcess, OutputChunk, Sandbox } from '@sandstream/types';
import { runSoak, type SoakReport } from '../src/index.js';

/** A Process that answers `override` first and the real one's members otherwise. */
function overriding(proc: BackgroundProcess, override: Partial<Record<PropertyKey, unknown>>): BackgroundProcess {
  return new Proxy(proc, {
    get(target, property) {
      if (Object.hasOwn(override, property)) return override[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A sandbox whose attached Processes go through `wrap`. */
function withAttach(sandbox: Sandbox, wrap: (proc: BackgroundProcess, options: AttachOptions | undefined) => BackgroundProcess): Sandbox {
  return new Proxy(sandbox, {
    get(target, property) {
      if (property === 'attach') return async (id: string, options?: AttachOptions) => wrap(await target.attach!(id, options), options);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function messages(report: SoakReport): string[] {
  return report.violations.map((v) => `[${v.kind}] ${v.message}`);
}

const RUN = { adapter: 'local', count: 60, concurrency: 5, seed: 7, settleBoundMs: 3_000 } as const;

describe('the soak fails on a broken attach', () => {
  it('when the skip is miscounted: what the attached Process delivers is not the stream from its skipped on', async () => {
    const report = await runSoak({
      ...RUN,
      decorate: (sandbox) =>
        withAttach(sandbox, (proc) => {
          const skipped = proc.skipped;
          return skipped === undefined ? proc : overriding(proc, { skipped: { ...skipped, stdout: skipped.stdout + 1 } });
        }),
    });
    const wrong = messages(report).filter((m) => /^\[process\] process \d+ \(seed 7, .*ending \{"kind":"(detach-attach|ended-forgotten)".*from its skipped .*sha256/.test(m));
    expect(wrong.length, messages(report).join('\n')).toBeGreaterThan(0);
  }, 120_000);

  it('when a chunk arrives twice after the attach: the stream is not byte-exact', async () => {
    const report = await runSoak({
      ...RUN,
      decorate: (sandbox) =>
        withAttach(sandbox, (proc) =>
          overriding(proc, {
            [Symbol.asyncIterator]: () => {
              const inner = proc[Symbol.asyncIterator]();
              let repeat: IteratorResult<OutputChunk, undefined> | undefined;
              let n = 0;
              return {
                async next() {
                  if (repeat !== undefined) {
                    const again = repeat;
                    repeat = undefined;
                    return again;
                  }
                  const result = await inner.next();
                  if (!result.done && ++n === 1) repeat = result;
                  return result;
                },
                return: (value?: undefined) => inner.return!(value),
              };
            },
          }),
        ),
    });
    const doubled = messages(report).filter((m) => /ending \{"kind":"(detach-attach|ended-forgotten)".*from its skipped \{[^}]*\}: (stdout|stderr): sha256 \w+ over \d+ bytes, the command wrote/.test(m));
    expect(doubled.length, messages(report).join('\n')).toBeGreaterThan(0);
  }, 120_000);

  it('when disposing an attached Process detaches it: the killed command runs on, is still listed and attachable, and its record is left', async () => {
    const report = await runSoak({
      ...RUN,
      decorate: (sandbox) => withAttach(sandbox, (proc) => overriding(proc, { [Symbol.asyncDispose]: () => proc.detach() })),
    });
    const all = messages(report);
    expect(all.filter((m) => /ending \{"kind":"kill-by-id".*commands\(\) still lists/.test(m)).length, all.join('\n')).toBeGreaterThan(0);
    expect(all.filter((m) => /attach\(\) of the forgotten .* gave a Process, not CommandNotFound/.test(m)).length).toBeGreaterThan(0);
    expect(all.filter((m) => /^\[leftovers\] \d+ background command record\(s\) the shared sandbox lists after the run/.test(m))).toHaveLength(1);
  }, 120_000);

  it('when close() leaves the background commands of its sandbox running: the owner-closed ending finds them unsettled and the sandbox still answering', async () => {
    const report = await runSoak({
      ...RUN,
      // Its loops never end: a short bound on each wait (the local adapter keeps its own kill wait).
      killWaitMs: 500,
      // The shared sandbox is closed by the target, not through this face.
      decorate: (sandbox) => overridingSandbox(sandbox, { close: async () => undefined }),
    });
    const all = messages(report);
    expect(all.filter((m) => /ending \{"kind":"owner-closed".*: not exited after its scope was left/.test(m)).length, all.join('\n')).toBeGreaterThan(0);
    expect(all.filter((m) => /ending \{"kind":"owner-closed".*: commands\(\) of the closed sandbox resolved, not SandboxClosed/.test(m)).length).toBeGreaterThan(0);
  }, 120_000);
});

/** A sandbox that answers `override` first. */
function overridingSandbox(sandbox: Sandbox, override: Partial<Record<PropertyKey, unknown>>): Sandbox {
  return new Proxy(sandbox, {
    get(target, property) {
      if (Object.hasOwn(override, property)) return override[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
