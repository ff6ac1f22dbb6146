import { validatorFor } from '@sandstream/types';
import { check, ConformanceFailure } from '../assert.js';
import { defineCase } from '../case.js';

/** The capability manifest: SS-CAP-3. */
export const manifestCases = [
  defineCase({
    id: 'capabilities.manifest',
    title: '"MUST be a CapabilityManifest valid against the spec\'s schema and MUST NOT change during the sandbox\'s lifetime": read again after every kind of use',
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
];
