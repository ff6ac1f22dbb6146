import { CAPABILITIES, type Capability, type RunOptions, type StreamOptions } from '@sandstream/types';
import { check, checkErrorCode, ConformanceFailure, describeError, thrownBy } from '../assert.js';
import { defineCase, type ConformanceCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { NOTHING_REFUSED } from '../refusals.js';
import { expectNeverRan, scratch } from './support/observe.js';

type Refusing = Exclude<Capability, 'binary-output' | 'attach-reconnect' | 'replay-full' | 'replay-tail'>;

/** The options that need each capability, for stream() and run(). */
const NEEDS: Record<Exclude<Refusing, 'streaming' | 'attach'>, { stream: StreamOptions; run: RunOptions }> = {
  stdin: { stream: { stdin: 'pipe' }, run: { input: 'data' } },
  'resource-limits': { stream: { limits: { cpuSeconds: 5 } }, run: { limits: { cpuSeconds: 5 } } },
  user: { stream: { user: 'nobody' }, run: { user: 'nobody' } },
  pty: { stream: { pty: { cols: 80, rows: 24 } }, run: { pty: { cols: 80, rows: 24 } } },
};

function checkRefusal(error: unknown, capability: Capability, what: string): void {
  checkErrorCode(error, 'CAPABILITY_NOT_SUPPORTED', what);
  const named = (error as { capability?: unknown }).capability;
  check(named === capability, `${what}: the error names capability ${JSON.stringify(named)}, expected ${JSON.stringify(capability)}`);
}

/** Fails if `name` in `dir` exists: the refused command ran anyway. A later, accepted command must have run first. */
async function checkNoSideEffect(ctx: CaseContext, dir: string, name: string, what: string): Promise<void> {
  await expectNeverRan(ctx, `${dir}/${name}`, `${what}: the command ran although the capability error was raised`, {
    path: `${dir}/${name}-later`,
    run: () => ctx.sandbox.run(['sh', '-c', 'touch "$1"', 'sh', `${dir}/${name}-later`]),
  });
}

/**
 * Without `attach` (spec 1.2): `stream()` with `background: true` throws, `attach()` and
 * `commands()` reject (where the sandbox has them at all), each naming `attach`, before any
 * side effect.
 */
async function refusesAttach(ctx: CaseContext, dir: string, touch: (name: string) => string[]): Promise<void> {
  if (ctx.sandbox.capabilities.streaming) {
    let error: unknown;
    try {
      const proc = ctx.sandbox.stream(touch('background'), { background: true });
      await proc[Symbol.asyncDispose]().catch(() => undefined);
      throw new ConformanceFailure('without attach, stream() with background: true must throw CapabilityNotSupported naming "attach" before any side effect; it returned a Process');
    } catch (thrown) {
      if (thrown instanceof ConformanceFailure) throw thrown;
      error = thrown;
    }
    checkRefusal(error, 'attach', 'stream() with background: true');
    await checkNoSideEffect(ctx, dir, 'background', 'stream() with background: true');
  }
  const calls: Array<[string, (() => Promise<unknown>) | undefined]> = [
    ['attach()', ctx.sandbox.attach === undefined ? undefined : () => ctx.sandbox.attach!(`${dir}/no-such-command`)],
    ['commands()', ctx.sandbox.commands === undefined ? undefined : () => ctx.sandbox.commands!()],
  ];
  for (const [what, call] of calls) {
    // A sandbox of 1.1 has neither: nothing to refuse.
    if (call === undefined) continue;
    let pending: Promise<unknown>;
    try {
      pending = call();
    } catch (error) {
      throw new ConformanceFailure(`${what} without attach must reject, not throw synchronously (threw ${describeError(error)})`);
    }
    let error: unknown;
    try {
      const value = await pending;
      throw new ConformanceFailure(`${what} without attach must reject with CapabilityNotSupported; it resolved with ${JSON.stringify(value)}`);
    } catch (thrown) {
      if (thrown instanceof ConformanceFailure) throw thrown;
      error = thrown;
    }
    checkRefusal(error, 'attach', `${what} without attach`);
  }
}

function negativeCase(capability: Refusing): ConformanceCase {
  return defineCase({
    id: `capabilities.absent-${capability}`,
    title: `"MUST raise CapabilityNotSupported naming that capability": without "${capability}", an operation that needs it is refused before any side effect`,
    requirements: ['SS-CAP-1', 'SS-CAP-2'],
    without: capability,
    async run(ctx) {
      const dir = await scratch(ctx);
      const touch = (name: string): string[] => ['sh', '-c', 'touch "$1"', 'sh', `${dir}/${name}`];
      if (capability === 'streaming') {
        const error = thrownBy(() => ctx.sandbox.stream(touch('stream')), 'stream() without streaming');
        checkRefusal(error, capability, 'stream() without streaming');
        await checkNoSideEffect(ctx, dir, 'stream', 'stream()');
        return;
      }
      if (capability === 'attach') return refusesAttach(ctx, dir, touch);
      const options = NEEDS[capability];
      if (ctx.sandbox.capabilities.streaming) {
        const error = thrownBy(() => ctx.sandbox.stream(touch('stream'), options.stream), `stream() needing ${capability}`);
        checkRefusal(error, capability, `stream() needing ${capability}`);
        await checkNoSideEffect(ctx, dir, 'stream', 'stream()');
      }
      let pending: Promise<unknown> | undefined;
      try {
        pending = ctx.sandbox.run(touch('run'), options.run);
      } catch (error) {
        throw new ConformanceFailure(`run() must reject, not throw synchronously (threw ${describeError(error)})`);
      }
      let error: unknown;
      try {
        await pending;
      } catch (thrown) {
        error = thrown;
      }
      checkRefusal(error, capability, `run() needing ${capability}`);
      await checkNoSideEffect(ctx, dir, 'run', 'run()');
    },
  });
}

/** What an adapter without a capability does instead: SS-CAP-1, SS-CAP-2. */
export const negativeBehaviourCases = [
  // Without binary-output nothing is refused: output is text, checked by 8.2-text-only-backends.ts (SS-TEXT-1).
  // Nor without the replay capabilities or attach-reconnect (NOTHING_REFUSED).
  ...CAPABILITIES.filter((c): c is Refusing => !NOTHING_REFUSED.includes(c)).map(negativeCase),
];
