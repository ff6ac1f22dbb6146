import { afterAll, beforeAll, describe, test, type TestContext } from 'vitest';
import type { CapabilityManifest, Sandbox } from '@sandstream/types';
import { CASES, isBlocking, manifestForReport, runCase, validateOptions, type ConformanceOptions } from './engine.js';
import { missingTools } from './sandbox-scripts.js';
import { runsAlone } from './schedule.js';
import { deselected } from './select.js';
import { watchWarnings } from './warnings.js';
import { KIT_SPEC_VERSION } from './version.js';
import { CANNOT_CROSS, connectTestee, type ConnectedTestee } from './testee/connect.js';

/** Options of {@link describeConformance}: the engine's, minus the progress and warning hooks. */
export type DescribeConformanceOptions = Omit<ConformanceOptions, 'onCaseStart' | 'onCaseEnd' | 'onWarning'>;

/**
 * Registers the conformance kit in a Vitest suite: one test per case, each
 * on a fresh sandbox. Cases the adapter's manifest rules out are skipped
 * with the reason; excluded cases are registered as skipped. The `setup`
 * and `teardown` hooks run in `beforeAll` and `afterAll`. With a number
 * above 1 as `concurrency`, independent cases are registered as concurrent
 * tests (Vitest's `maxConcurrency` bounds them); cases that must run alone
 * stay sequential. `'auto'` (the default) is sequential here: tests are
 * registered before any sandbox exists to measure. What the adapter raises
 * where no caller can catch it fails the test of the case whose work raised
 * it; a warning a case provokes on purpose is not printed (ADR-0031).
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
  const { caseTimeoutMs: timeoutMs, graceMs, concurrency, hooks, ownerModule } = validateOptions(options);
  const expected = new Set(options.expectedFailures ?? []);
  let manifest: CapabilityManifest | undefined;
  let problem: string | undefined;

  let releaseWarnings: (() => void) | undefined;
  // Through a testee (ADR-0038), its factory and hooks stand in for the module's.
  let testee: ConnectedTestee | undefined;
  const factory = async (): Promise<Sandbox> => (testee === undefined ? options.factory!() : testee.factory());
  const linkFault = (): void => {
    if (testee?.link.fatal !== undefined) throw new Error(`error: the link to the testee failed: ${testee.link.fatal}`);
  };

  describe(`Sandstream ${KIT_SPEC_VERSION} conformance`, () => {
    beforeAll(async () => {
      // A warning a case provokes on purpose is not printed; any other is, as usual (warnings.ts).
      releaseWarnings = watchWarnings({}, () => false);
      if (options.testee !== undefined) testee = await connectTestee(options.testee, 3 * timeoutMs);
      await hooks.setup?.();
      const probe: Sandbox = await factory();
      try {
        manifest = manifestForReport(probe.capabilities);
        problem = await missingTools(probe);
      } finally {
        await probe.close();
      }
    });
    afterAll(async () => {
      releaseWarnings?.();
      await hooks.teardown?.();
      const link = testee?.link;
      testee = undefined;
      await link?.close();
    });
    const unknown = [...expected].filter((id) => !CASES.some((c) => c.id === id));
    if (unknown.length > 0) {
      test('expected failures name cases of this kit', () => {
        throw new Error(`stale expected failures, naming no case: ${unknown.join(', ')}`);
      });
    }
    for (const testCase of CASES) {
      const name = `${testCase.id}: ${testCase.title} [${testCase.requirements.join(', ')}]`;
      const left = deselected(testCase, options);
      if (left !== undefined) {
        test.skip(`${name} (disabled: ${left})`, () => undefined);
        continue;
      }
      const concurrent = concurrency !== 'auto' && concurrency > 1 && runsAlone(testCase) === undefined;
      test(name, { timeout: Math.max(testCase.timeoutMs ?? 0, timeoutMs) + 15_000, concurrent }, async (ctx: TestContext) => {
        if (problem !== undefined) throw new Error(`error: ${problem}`);
        const cannot = testee === undefined ? undefined : CANNOT_CROSS[testCase.id];
        if (cannot !== undefined) {
          ctx.skip(`not through a testee: ${cannot}`);
          return;
        }
        const outcome = await runCase({ testCase, manifest: manifest!, factory, timeoutMs, graceMs, hooks: testee?.hooks ?? hooks, ownerModule, launchOwner: testee?.launchOwner });
        linkFault();
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
        if (isBlocking(outcome, testCase)) {
          throw new Error(`${outcome.status}: ${outcome.message ?? ''}`);
        }
      });
    }
  });
}
