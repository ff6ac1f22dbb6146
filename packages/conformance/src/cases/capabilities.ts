import { CAPABILITIES, validatorFor, type Capability, type RunOptions, type StreamOptions } from '@sandstream/types';
import { check, checkErrorCode, ConformanceFailure, describeError, thrownBy } from '../assert.js';
import { defineCase, type ConformanceCase } from '../case.js';
import type { CaseContext } from '../context.js';

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

/** Fails if `marker` exists: the refused command ran anyway. */
async function checkNoSideEffect(ctx: CaseContext, marker: string, what: string): Promise<void> {
  await ctx.sleep(150);
  if ((await ctx.readFile(marker)) !== undefined) {
    throw new ConformanceFailure(`${what}: the command ran although the capability error was raised`);
  }
}

function negativeCase(capability: Exclude<Capability, 'binary-output'>): ConformanceCase {
  return defineCase({
    id: `capabilities.absent-${capability}`,
    title: `without "${capability}", the operation raises CapabilityNotSupported naming it, before any side effect`,
    requirements: ['SS-CAP-1', 'SS-CAP-2'],
    without: capability,
    async run(ctx) {
      const dir = await ctx.scratch();
      const touch = (name: string): string[] => ['sh', '-c', 'touch "$1"', 'sh', `${dir}/${name}`];
      if (capability === 'streaming') {
        const error = thrownBy(() => ctx.sandbox.stream(touch('stream')), 'stream() without streaming');
        checkRefusal(error, capability, 'stream() without streaming');
        await checkNoSideEffect(ctx, `${dir}/stream`, 'stream()');
        return;
      }
      const options = NEEDS[capability];
      if (ctx.sandbox.capabilities.streaming) {
        const error = thrownBy(() => ctx.sandbox.stream(touch('stream'), options.stream), `stream() needing ${capability}`);
        checkRefusal(error, capability, `stream() needing ${capability}`);
        await checkNoSideEffect(ctx, `${dir}/stream`, 'stream()');
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
      await checkNoSideEffect(ctx, `${dir}/run`, 'run()');
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
      const first = JSON.parse(JSON.stringify(ctx.sandbox.capabilities)) as unknown;
      if (!validate(first)) {
        throw new ConformanceFailure(
          `the manifest does not match the schema: ${validate.issues.map((i) => `${i.instancePath || '/'} ${i.message}`).join('; ')}`,
        );
      }
      await ctx.exec(['true']);
      const second = JSON.parse(JSON.stringify(ctx.sandbox.capabilities)) as unknown;
      check(JSON.stringify(first) === JSON.stringify(second), 'the manifest changed while the sandbox was in use');
    },
  }),
  // Without binary-output nothing is refused: output is text, and output.ts checks it (SS-TEXT-1).
  ...CAPABILITIES.filter((c): c is Exclude<Capability, 'binary-output'> => c !== 'binary-output').map(negativeCase),
];
