import { describe, test, beforeAll, type TestContext } from 'vitest';
import type { CapabilityManifest, Sandbox } from '@sandstream/types';
import { CASES, isAdvisory, manifestForReport, runCase, validateOptions, type ConformanceOptions } from './engine.js';
import { matches } from './select.js';
import { KIT_SPEC_VERSION } from './version.js';

/** Options of {@link describeConformance}: the engine's, minus the progress hooks. */
export type DescribeConformanceOptions = Omit<ConformanceOptions, 'onCaseStart' | 'onCaseEnd'>;

/**
 * Registers the conformance kit in a Vitest suite: one test per case, each
 * on a fresh sandbox. Cases the adapter's manifest rules out are skipped
 * with the reason; excluded cases are registered as skipped.
 *
 * @example
 * ```ts
 * import { describeConformance } from '@sandstream/conformance/vitest';
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * describeConformance({ factory: () => createLocalSandbox() });
 * ```
 */
export function describeConformance(options: DescribeConformanceOptions): void {
  // The engine's rules: unknown options and selectors that match nothing throw here.
  const { caseTimeoutMs: timeoutMs, graceMs } = validateOptions(options);
  const expected = new Set(options.expectedFailures ?? []);
  let manifest: CapabilityManifest | undefined;

  describe(`Sandstream ${KIT_SPEC_VERSION} conformance`, () => {
    beforeAll(async () => {
      const probe: Sandbox = await options.factory();
      manifest = manifestForReport(probe.capabilities);
      await probe.close();
    });
    const unknown = [...expected].filter((id) => !CASES.some((c) => c.id === id));
    if (unknown.length > 0) {
      test('expected failures name cases of this kit', () => {
        throw new Error(`stale expected failures, naming no case: ${unknown.join(', ')}`);
      });
    }
    for (const testCase of CASES) {
      const included = (options.include ?? []).length === 0 || options.include!.some((s) => matches(testCase, s));
      const excluded = (options.exclude ?? []).some((s) => matches(testCase, s));
      const name = `${testCase.id}: ${testCase.title} [${testCase.requirements.join(', ')}]`;
      if (!included || excluded) {
        test.skip(`${name} (disabled: ${excluded ? 'excluded' : 'not included'} by the options)`, () => undefined);
        continue;
      }
      test(name, { timeout: Math.max(testCase.timeoutMs ?? 0, timeoutMs) + 15_000 }, async (ctx: TestContext) => {
        const outcome = await runCase({ testCase, manifest: manifest!, factory: options.factory, timeoutMs, graceMs });
        if (outcome.status === 'skipped') {
          ctx.skip(outcome.message);
          return;
        }
        const failed = outcome.status !== 'pass';
        if (expected.has(testCase.id)) {
          if (outcome.status === 'fail') return;
          if (!failed) throw new Error(`${testCase.id} is listed as an expected failure but passes: remove it from the list`);
          throw new Error(`${outcome.status}: ${outcome.message ?? ''}`);
        }
        if (failed && !(outcome.status === 'fail' && isAdvisory(testCase))) {
          throw new Error(`${outcome.status}: ${outcome.message ?? ''}`);
        }
      });
    }
  });
}
