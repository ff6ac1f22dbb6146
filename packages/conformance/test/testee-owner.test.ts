/**
 * owner.crash through a testee (spec 1.4 section 18.6): the kit crashes a
 * second instance of the testee, killing the process its hello names, and
 * holds what that testee's adapter left to the bound the first one states.
 * The testee serves test/fixtures/owner-lab-adapter.mjs: the real local
 * adapter, or the plain local backend without its guardian.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { runConformance } from '../src/index.js';
import type { TesteeCommand } from '../src/testee/link.js';
import { Lab } from './broken/index.js';

const TESTEE_CLI = fileURLToPath(new URL('../dist/testee-cli.js', import.meta.url));
const OWNER_LAB = fileURLToPath(new URL('./fixtures/owner-lab-adapter.mjs', import.meta.url));
const MISBEHAVING = fileURLToPath(new URL('./fixtures/misbehaving-testee.mjs', import.meta.url));

/** Two testees and a crash, beside a second test suite. */
const TEST_TIMEOUT_MS = 120_000;

/** The testee serving the owner lab's `kind`, marked by `lab`; `ownerKind`: what its owner hook answers. */
function labTestee(lab: Lab, kind: string, ownerKind?: string): TesteeCommand {
  return {
    command: process.execPath,
    args: [TESTEE_CLI, OWNER_LAB],
    env: {
      ...(process.env as Record<string, string>),
      SANDSTREAM_OWNER_LAB: kind,
      SANDSTREAM_BROKEN_ADAPTER: lab.marker,
      ...(ownerKind === undefined ? {} : { SANDSTREAM_OWNER_LAB_OWNER: ownerKind }),
    },
    forwardStderr: false,
  };
}

async function ownerCases(testee: TesteeCommand): Promise<Map<string, { status: string; message?: string | undefined }>> {
  const report = await runConformance({ testee, include: ['owner.crash', 'owner.bound-stated'], concurrency: 1 });
  return new Map(report.cases.filter((c) => c.status !== 'disabled').map((c) => [c.id, c]));
}

describe('owner.crash through a testee crashes a second testee [SS-OWNER-1]', () => {
  test('the real local adapter passes: its guardian ends the tree of the testee killed with SIGKILL', { timeout: TEST_TIMEOUT_MS }, async () => {
    const lab = new Lab('testee-owner-local');
    try {
      const cases = await ownerCases(labTestee(lab, 'local'));
      expect([...cases].map(([id, c]) => `${id}: ${c.status} ${c.message ?? ''}`)).toEqual(['owner.bound-stated: pass ', 'owner.crash: pass ']);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });

  test('an adapter without the guard fails, naming every survivor', { timeout: TEST_TIMEOUT_MS }, async () => {
    const lab = new Lab('testee-owner-unguarded');
    try {
      const crash = (await ownerCases(labTestee(lab, 'unguarded'))).get('owner.crash');
      expect(crash?.status, crash?.message).toBe('fail');
      for (const role of ['owner-leader', 'owner-background', 'owner-foreground']) expect(crash?.message).toMatch(new RegExp(`killed with SIGKILL .* still runs: .*pid [0-9]+ \\(${role}\\)`));
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });

  test("the owner hook's env reaches the second testee: a guarded first testee whose hook makes the owner unguarded fails", { timeout: TEST_TIMEOUT_MS }, async () => {
    const lab = new Lab('testee-owner-hook');
    try {
      const cases = await ownerCases(labTestee(lab, 'local', 'unguarded'));
      expect(cases.get('owner.bound-stated')?.status).toBe('pass');
      expect(cases.get('owner.crash')?.status, cases.get('owner.crash')?.message).toBe('fail');
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });

  test('a testee whose hello names no pid is a harness error of the case, never a verdict', { timeout: TEST_TIMEOUT_MS }, async () => {
    const lab = new Lab('testee-owner-no-pid');
    const testee: TesteeCommand = {
      command: process.execPath,
      args: [MISBEHAVING],
      env: { ...(process.env as Record<string, string>), SANDSTREAM_TESTEE_FAULT: 'no-pid', SANDSTREAM_TESTEE_MARK: lab.marker },
      forwardStderr: false,
    };
    try {
      const crash = (await ownerCases(testee)).get('owner.crash');
      expect(crash?.status).toBe('error');
      expect(crash?.message).toMatch(/its hello states no `pid`, the process the kit would kill to crash it/);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });
});
