/**
 * The whole conformance kit against real E2B, through this module's own
 * default export and `conformanceHooks`, when `E2B_API_KEY` is set (one
 * sandbox for the run, from `E2B_TEMPLATE` or the SDK's default template).
 * Without it the suite is skipped and says why.
 */
import { describe, it } from 'vitest';
import { describeConformance } from '@sandstream/conformance/vitest';
import createSandbox, { conformanceHooks } from '../src/conformance.js';

const apiKey = process.env['E2B_API_KEY'];

if (apiKey !== undefined && apiKey !== '') {
  describeConformance({ factory: createSandbox, hooks: conformanceHooks, caseTimeoutMs: 60_000 });
} else {
  const reason = 'E2B_API_KEY is not set, so the conformance kit does not run against real E2B';
  console.info(`[adapter-e2b] skipped: ${reason}`);
  describe('the conformance kit against real E2B', () => {
    it.skip(`skipped: ${reason}`, () => undefined);
  });
}
