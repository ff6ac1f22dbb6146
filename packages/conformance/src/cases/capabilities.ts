import { CAPABILITIES, validatorFor, type Capability, type RunOptions, type StreamOptions } from '@sandstream/types';
import { check, checkErrorCode, ConformanceFailure, describeError, thrownBy } from '../assert.js';
import { defineCase, type ConformanceCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { expectNeverRan, scratch } from './support/observe.js';

/** The options that need each capability, for stream() and run(). */
const NEEDS: Record<Exclude<Capability, 'streaming' | 'binary-output'>, { stream: StreamOptions; run: RunOptions }> = {
  stdin: { stream: { stdin: 'pipe' }, run: { input: 'data' } },
  'resource-limits': { stream: { limits: { cpuSeconds: 5 } }, run: { limits: { cpuSeconds: 5 } } },
  user: { stream: { user: 'nobody' }, run: { user: 'nobody' } },
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

function negativeCase(capability: Exclude<Capability, 'binary-output'>): ConformanceCase {
  return defineCase({
    id: `capabilities.absent-${capability}`,
    title: `without "${capability}", the operation raises CapabilityNotSupported naming it, before any side effect`,
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

export const capabilityCases = [
  defineCase({
    id: 'capabilities.manifest',
    title: 'the capability manifest is valid against the schema and constant',
    requirements: ['SS-CAP-3'],
    async run(ctx) {
      const validate = validatorFor('CapabilityManifest');
      const read = (): string => JSON.stringify(ctx.sandbox.capabilities);
      const first = read();
      const parsed = JSON.parse(first) as unknown;
      if (!validate(parsed)) {
        throw new ConformanceFailure(
          `the manifest does not match the schema: ${validate.issues.map((i) => `${i.instancePath || '/'} ${i.message}`).join('; ')}`,
        );
      }
      // Read it again, many times, after each kind of use the sandbox sees.
      const same = (when: string): void => {
        for (let i = 0; i < 5; i++) {
          const now = read();
          check(now === first, `the manifest changed ${when}: ${now} after ${first}`);
        }
      };
      same('between reads');
      await ctx.exec(['true']);
      same('after a run()');
      await ctx.sandbox.run(['/nonexistent/sandstream-no-such-command']).catch(() => undefined);
      same('after a command that could not start');
      await ctx.sandbox.run(['sh', '-c', 'exit 3']);
      same('after a command that failed');
      if (ctx.sandbox.capabilities.streaming) {
        await using proc = ctx.sandbox.stream(['sh', '-c', 'echo streamed']);
        for await (const chunk of proc) void chunk;
        await proc.wait();
        same('after a stream()');
      }
      const other = await ctx.factory();
      try {
        same('after the factory made another sandbox');
      } finally {
        await other.close();
      }
      same('after another sandbox was closed');
    },
  }),
  // Without binary-output nothing is refused: output is text, and output.ts checks it (SS-TEXT-1).
  ...CAPABILITIES.filter((c): c is Exclude<Capability, 'binary-output'> => c !== 'binary-output').map(negativeCase),
];
