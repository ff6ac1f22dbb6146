/**
 * The bridge loses no verdict (ADR-0038): the real local adapter and every
 * broken adapter of ./broken, each served by a testee process
 * (test/testee/broken-testee.ts, built by tsconfig.testee.json), get the
 * verdicts broken-adapters.test.ts requires of a direct run: the same cases
 * fail, for the same reasons, and the cases beside them pass.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { hasCapability } from '@sandstream/types';
import { captureWarnings, type CapturedWarnings } from '@sandstream/test-support/warnings';
import { unless } from '@sandstream/test-support/skips';
import { killEach } from '@sandstream/test-support/processes';
import { waitFor } from '@sandstream/test-support/timing';
import { CASES, runConformance } from '../src/index.js';
import { CANNOT_CROSS } from '../src/testee/connect.js';
import type { TesteeCommand } from '../src/testee/link.js';
import { expectCaught, THROUGH_A_TESTEE_CASE_TIMEOUT_MS, type Via } from './broken/expect-caught.js';
import { localCapabilities } from './broken/local-capabilities.js';
import { BROKEN_ADAPTERS, Lab, markedProcesses, type BrokenAdapter } from './broken/index.js';

const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const TESTEE = fileURLToPath(new URL('../.testee-build/test/testee/broken-testee.js', import.meta.url));

/**
 * Broken adapters whose defect cannot show through a testee, and why. Each
 * is a limit of what crosses a process boundary (spec 1.3 section 18.6),
 * not a verdict the bridge changes.
 */
const NOT_THROUGH_A_TESTEE: Readonly<Record<string, string>> = {
  'no-gc-safety-net': `its catching case, teardown.garbage-collected, cannot run through a testee: ${CANNOT_CROSS['teardown.garbage-collected']}`,
};

/** The testee command that serves `adapter` (or the real local adapter) in `lab`. */
function testeeFor(name: string, lab: Lab): TesteeCommand {
  return {
    command: process.execPath,
    args: [TESTEE],
    env: { ...(process.env as Record<string, string>), SANDSTREAM_BROKEN_NAME: name, SANDSTREAM_LAB_MARKER: lab.marker },
    forwardStderr: false,
  };
}
const VIA: Via = { kind: 'testee', command: (adapter: BrokenAdapter, lab: Lab) => testeeFor(adapter.name, lab) };

const LOCAL_CAPABILITIES = await localCapabilities();

let leakWarnings: CapturedWarnings | undefined;
beforeAll(() => {
  leakWarnings = captureWarnings(['SANDSTREAM_PROCESS_LEAKED']);
  // The broken adapters are TypeScript: the testee process runs them built.
  execFileSync(process.execPath, [fileURLToPath(import.meta.resolve('typescript/bin/tsc')), '-p', 'tsconfig.testee.json'], { cwd: PACKAGE, stdio: 'inherit' });
}, 120_000);
afterAll(() => leakWarnings?.release());

// A broken adapter's selection, or every case through the real adapter, beside a second test suite.
const TEST_TIMEOUT_MS = 240_000;

describe('through a testee, the real local adapter', () => {
  test('passes every case that can cross, and only teardown.garbage-collected is skipped for the testee', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('testee-local');
    try {
      const report = await runConformance({ testee: testeeFor('local', lab), concurrency: 1, caseTimeoutMs: THROUGH_A_TESTEE_CASE_TIMEOUT_MS });
      const problems = report.cases.filter((c) => c.status !== 'pass' && c.status !== 'skipped');
      expect(problems.map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`)).toEqual([]);
      const applies = (c: (typeof CASES)[number]): boolean =>
        (c.needs ?? []).every((capability) => hasCapability(LOCAL_CAPABILITIES, capability)) &&
        (c.without === undefined || !hasCapability(LOCAL_CAPABILITIES, c.without)) &&
        // The local adapter serves no sever hook: it holds no link to cut (owner.link-lost).
        (c.needsHooks ?? []).length === 0;
      const statuses = Object.fromEntries(report.cases.map((c) => [c.id, c.status]));
      expect(statuses).toEqual(Object.fromEntries(CASES.map((c) => [c.id, applies(c) && CANNOT_CROSS[c.id] === undefined ? 'pass' : 'skipped'])));
      expect(report.cases.find((c) => c.id === 'teardown.garbage-collected')?.message).toMatch(/^not through a testee: /);
      expect(report.ok).toBe(true);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });
});

describe.concurrent('through a testee, each broken adapter', () => {
  const ordered = [...BROKEN_ADAPTERS].sort((a, b) => Number(b.slow === true) - Number(a.slow === true));
  for (const adapter of ordered) {
    const catchers = Object.keys(adapter.caughtBy).join(', ');
    const lacking = adapter.needs !== undefined && !LOCAL_CAPABILITIES[adapter.needs] ? `the local adapter does not advertise ${adapter.needs} on this machine` : NOT_THROUGH_A_TESTEE[adapter.name];
    unless(test, lacking)(`${adapter.name} is caught by ${catchers}, as in a direct run`, { timeout: TEST_TIMEOUT_MS }, ({ expect }) => expectCaught(adapter, expect, VIA));
  }
});

type Survivors = ReturnType<typeof markedProcesses>;
/** How long the file's last sweep waits for what it killed to be gone before failing, naming it. */
const SWEEP_BOUND_MS = 20_000;

afterAll(async () => {
  // What a testee's sandboxes left is marked by the test's lab; anything still running is killed
  // until a look finds nothing. SIGKILL is delivered when the kernel next runs the process, which
  // on a loaded machine is not at once: only what survives a generous bound fails the file.
  const ours = (): Survivors => [...Lab.markers].flatMap((marker) => markedProcesses(marker));
  let left: Survivors = [];
  await waitFor(
    () => {
      left = ours();
      killEach(left);
      return left.length === 0;
    },
    SWEEP_BOUND_MS,
    () => `processes survived SIGKILL after the testee verdict tests: ${JSON.stringify(left)}`,
  );
}, SWEEP_BOUND_MS + 10_000);
