/**
 * The check every broken adapter gets: its catching cases fail for their
 * reason, the cases beside them still pass. It runs the adapter directly, or
 * through a testee process that serves it (ADR-0038), so both runs are held to
 * the same verdicts.
 */
import type { ExpectStatic } from 'vitest';
import type { CaseStatus, ConformanceReport, SandboxFactory } from '@sandstream/types';
import { CASES, runCase, runConformance } from '../../src/index.js';
import { connectTestee } from '../../src/testee/connect.js';
import type { TesteeCommand } from '../../src/testee/link.js';
import type { ConformanceHooks } from '../../src/hooks.js';
import type { BrokenAdapter } from './adapter.js';
import { Lab } from './lab.js';

interface Outcome {
  readonly status: CaseStatus;
  readonly message?: string;
}

/**
 * One case at a time: 'auto' turns concurrent when the measured round trip
 * is slow, which on a loaded machine it is, and these tests compare every
 * case's status, which must not depend on the machine's load.
 */
const SERIAL = 1;

/**
 * The per-case limit through a testee, where the adapter has none of its
 * own: every call crosses a process and a pipe, and beside a second test
 * suite on two cores a case that takes 0.5 s alone (attach.ended) ran past
 * the kit's default 20 s. The verdicts compared here do not depend on time;
 * the limit only ends a case that hangs.
 */
export const THROUGH_A_TESTEE_CASE_TIMEOUT_MS = 60_000;

/** How the adapter is reached: in this process, or through a testee that serves it in the lab. */
export type Via = { readonly kind: 'direct' } | { readonly kind: 'testee'; readonly command: (adapter: BrokenAdapter, lab: Lab) => TesteeCommand };

/**
 * Runs the selected cases against a broken adapter: through runConformance,
 * or, for an adapter with `caseTimeoutOverrideMs` or `viaRunCase`, through
 * the kit's runCase, one case at a time (with the cases' own time limits
 * lowered to the override).
 */
async function runSelected(
  adapter: BrokenAdapter,
  lab: Lab,
  include: readonly string[],
  via: Via,
): Promise<{ outcomes: Map<string, Outcome>; report?: ConformanceReport }> {
  const caseTimeoutMs = adapter.caseTimeoutMs ?? (via.kind === 'testee' ? THROUGH_A_TESTEE_CASE_TIMEOUT_MS : 20_000);
  const override = adapter.caseTimeoutOverrideMs;
  if (override === undefined && adapter.viaRunCase === undefined) {
    const subject = via.kind === 'direct' ? { factory: () => adapter.create(lab) } : { testee: via.command(adapter, lab) };
    const report = await runConformance({ ...subject, include, caseTimeoutMs, concurrency: SERIAL });
    const outcomes = new Map<string, Outcome>(report.cases.map((c) => [c.id, c]));
    return { outcomes, report };
  }
  const testee = via.kind === 'testee' ? await connectTestee(via.command(adapter, lab)) : undefined;
  try {
    const factory: SandboxFactory = testee?.factory ?? (() => adapter.create(lab));
    const hooks: ConformanceHooks = testee?.hooks ?? {};
    const probe = await factory();
    const manifest = { ...probe.capabilities };
    await probe.close();
    const outcomes = new Map<string, Outcome>();
    for (const id of include) {
      const testCase = CASES.find((c) => c.id === id);
      if (testCase === undefined) throw new Error(`no case ${id}`);
      const shortened = override === undefined ? testCase : { ...testCase, timeoutMs: Math.min(testCase.timeoutMs ?? override, override) };
      // The larger of the run's and the case's own limit applies, so both are lowered.
      const timeoutMs = override === undefined ? caseTimeoutMs : Math.min(caseTimeoutMs, override);
      outcomes.set(id, await runCase({ testCase: shortened, manifest, factory, timeoutMs, hooks }));
    }
    if (testee?.link.fatal !== undefined) throw new Error(`the link to the testee failed: ${testee.link.fatal}`);
    return { outcomes };
  } finally {
    await testee?.link.close();
  }
}

function describeOutcomes(outcomes: Map<string, Outcome>, ids: Iterable<string>): string {
  return [...ids].map((id) => `${id}: ${outcomes.get(id)?.status} ${outcomes.get(id)?.message ?? ''}`).join('\n');
}

/** Runs `adapter`'s catching and neighbouring cases and holds them to its expectations. */
export async function expectCaught(adapter: BrokenAdapter, expect: ExpectStatic, via: Via = { kind: 'direct' }): Promise<void> {
  const caught = Object.keys(adapter.caughtBy);
  const alsoFails = adapter.alsoFails ?? [];
  const stillPasses = adapter.stillPasses ?? [];
  const include = [...caught, ...alsoFails, ...stillPasses];
  expect(caught.length, 'a broken adapter names the case that catches it').toBeGreaterThan(0);
  const lab = new Lab(adapter.name);
  try {
    const { outcomes, report } = await runSelected(adapter, lab, include, via);
    const statuses = Object.fromEntries(include.map((id) => [id, outcomes.get(id)?.status]));
    const expected = Object.fromEntries([
      ...caught.map((id) => [id, 'fail']),
      ...alsoFails.map((id) => [id, 'fail']),
      ...stillPasses.map((id) => [id, 'pass']),
    ]);
    expect(statuses, describeOutcomes(outcomes, include)).toEqual(expected);
    for (const [id, pattern] of Object.entries(adapter.caughtBy)) {
      expect(outcomes.get(id)?.message, `why ${id} failed`).toMatch(pattern);
    }
    if (report !== undefined) {
      // An advisory (SHOULD) failure is reported but does not make the run fail.
      expect(report.ok).toBe(adapter.advisory === true);
      expect(report.summary.error).toBe(0);
    }
  } finally {
    await lab.cleanup();
  }
}
