/**
 * The kit tests itself: every broken adapter in ./broken (the local adapter
 * with exactly one defect) must fail the cases meant to catch it, for the
 * reason those cases give, while the cases run alongside still pass; and
 * the real local adapter must pass every case.
 *
 * Broken adapters leak processes on purpose: each test has its own Lab,
 * whose marker variable finds and kills what its sandboxes left running.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { captureWarnings, type CapturedWarnings } from '@sandstream/test-support/warnings';
import { hasCapability, type Capability, type ConformanceReport } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { killEach } from '@sandstream/test-support/processes';
import { waitFor } from '@sandstream/test-support/timing';
import { CASES, runConformance } from '../src/index.js';
import { expectCaught } from './broken/expect-caught.js';
import { localCapabilities } from './broken/local-capabilities.js';
import { BROKEN_ADAPTERS, Lab, markedProcesses } from './broken/index.js';
import { unboundedReplay } from './broken/background.js';
import { labEnv, labSandbox } from './fixtures/owner-lab-adapter.mjs';
import { linkHooks, linkSandbox, type LinkKind } from './fixtures/link-lab.js';

/** The module an owner process loads in owner.crash: the lab's adapters, configured by the owner hook's env. */
const OWNER_LAB = fileURLToPath(new URL('./fixtures/owner-lab-adapter.mjs', import.meta.url));

/** What the local adapter can do on this machine. */
const LOCAL_CAPABILITIES = await localCapabilities();

// Broken adapters leak Processes on purpose, and the garbage-collection case collects
// the whole process: the runtime's leak warnings for what they leaked are expected here.
let leakWarnings: CapturedWarnings | undefined;
beforeAll(() => {
  leakWarnings = captureWarnings(['SANDSTREAM_PROCESS_LEAKED']);
});
afterAll(() => leakWarnings?.release());

/** One case at a time (see expect-caught.ts). */
const SERIAL = 1;

/** Generous: a whole-kit run takes about 8 s alone, longer beside other tests. */
const TEST_TIMEOUT_MS = 120_000;

describe('the real local adapter', () => {
  test('passes every case of the kit, and leaves no process behind', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('local');
    let report: ConformanceReport;
    try {
      report = await runConformance({
        factory: () => lab.local(),
        // owner.crash's owner process makes the same sandboxes, marked by the same lab.
        ownerModule: OWNER_LAB,
        hooks: { owner: () => ({ env: labEnv('local', lab.marker) }) },
        caseTimeoutMs: 20_000,
        concurrency: SERIAL,
      });
    } finally {
      const survivors = await lab.cleanup();
      expect(survivors, 'processes the real adapter left running').toEqual([]);
    }
    const problems = report.cases.filter((c) => c.status !== 'pass' && c.status !== 'skipped');
    expect(problems.map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.summary.fail).toBe(0);
    expect(report.summary.error).toBe(0);
    expect(report.summary.disabled).toBe(0);
    // Exactly the cases the manifest rules out, and those needing a hook the local adapter has no
    // use for (sever: no link to cut), are skipped; every other case passes.
    const applies = (c: (typeof CASES)[number]): boolean =>
      (c.needs ?? []).every((capability) => hasCapability(LOCAL_CAPABILITIES, capability)) &&
      (c.without === undefined || !hasCapability(LOCAL_CAPABILITIES, c.without)) &&
      (c.needsHooks ?? []).length === 0;
    const statuses = Object.fromEntries(report.cases.map((c) => [c.id, c.status]));
    expect(statuses).toEqual(Object.fromEntries(CASES.map((c) => [c.id, applies(c) ? 'pass' : 'skipped'])));
    for (const skipped of report.cases.filter((c) => c.status === 'skipped')) {
      expect(skipped.message, `${skipped.id} is skipped without a reason`).toMatch(/advertise|exports no `conformanceHooks\.sever`/);
    }
  });

  test.for<Capability>(['stdin', 'resource-limits', 'user', 'attach'])(
    'without "%s", the negative case passes and the cases that need the capability are skipped with the reason',
    { timeout: TEST_TIMEOUT_MS },
    async (capability, { expect }) => {
      const positive = CASES.filter((c) => c.needs?.includes(capability)).map((c) => c.id);
      expect(positive.length, `cases that need ${capability}`).toBeGreaterThan(0);
      const negative = `capabilities.absent-${capability}`;
      const lab = new Lab(`without-${capability}`);
      try {
        const report = await runConformance({
          concurrency: SERIAL,
          factory: () => lab.local({ capabilities: { [capability]: false } }),
          include: [negative, ...positive],
        });
        const byId = new Map(report.cases.map((c) => [c.id, c]));
        expect(byId.get(negative)?.status, byId.get(negative)?.message).toBe('pass');
        for (const id of positive) {
          expect(byId.get(id)?.status, id).toBe('skipped');
          expect(byId.get(id)?.message).toContain(`does not advertise "${capability}"; the negative case ${negative} runs instead`);
        }
        expect(report.ok).toBe(true);
      } finally {
        expect(await lab.cleanup()).toEqual([]);
      }
    },
  );

  // ADR-0036: the local runtime with replayBytes Infinity declares replay-full instead of replay-tail.
  test('with an unbounded replay (replay-full), every attach case passes', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('replay-full');
    try {
      const report = await runConformance({ concurrency: SERIAL, factory: () => unboundedReplay(lab), include: ['attach.*', 'background.*'] });
      const ran = report.cases.filter((c) => c.status !== 'disabled');
      expect(ran.map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`)).toEqual(
        ran.map((c) => {
          if (c.id === 'attach.replay-tail') return `${c.id}: skipped the adapter does not advertise "replay-tail"`;
          // In one host process: no handle elsewhere can reconnect (the remote adapters' kit runs prove those two).
          if (c.id === 'attach.reconnect' || c.id === 'attach.link-lost') return `${c.id}: skipped the adapter does not advertise "attach-reconnect"`;
          return `${c.id}: pass `;
        }),
      );
      expect(ran.find((c) => c.id === 'attach.replay-full')?.status).toBe('pass');
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });

  test('without "streaming", capabilities.absent-streaming passes', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('without-streaming');
    try {
      const report = await runConformance({
        concurrency: SERIAL,
        factory: () => lab.local({ capabilities: { streaming: false } }),
        include: ['capabilities.absent-streaming'],
      });
      const negative = report.cases.find((c) => c.id === 'capabilities.absent-streaming');
      expect(negative?.status, negative?.message).toBe('pass');
      expect(report.ok).toBe(true);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });
});

// Spec 1.4 section 9.11: a foreground command's link cut for good (SS-OWNER-1), through the sever hook.
describe('link loss', () => {
  /** owner.link-lost's outcome against a link-lab sandbox of `kind`, or the plain local adapter (no sever hook). */
  async function linkLost(kind: LinkKind | 'no-hook'): Promise<{ status: string; message?: string | undefined }> {
    const lab = new Lab(`link-${kind}`);
    try {
      const report = await runConformance({
        factory: () => (kind === 'no-hook' ? lab.local() : lab.track(linkSandbox(kind, lab.graceMs, lab.env()))),
        ...(kind === 'no-hook' ? {} : { hooks: linkHooks }),
        include: ['owner.link-lost'],
        concurrency: SERIAL,
      });
      const outcome = report.cases.find((c) => c.id === 'owner.link-lost');
      return { status: outcome?.status ?? 'missing', message: outcome?.message };
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  }

  test('an adapter that ends the tree by the termination sequence once the link is cut passes; so does one whose link comes back', { timeout: TEST_TIMEOUT_MS }, async () => {
    for (const kind of ['kept', 'reconnected'] as const) {
      const outcome = await linkLost(kind);
      expect(outcome.status, `${kind}: ${outcome.message}`).toBe('pass');
    }
  });

  test('an adapter whose Process fails on a cut link while the tree runs on fails, naming the survivors', { timeout: TEST_TIMEOUT_MS }, async () => {
    const outcome = await linkLost('dropped');
    expect(outcome.status, outcome.message).toBe('fail');
    for (const role of ['owner-leader', 'owner-background', 'owner-foreground']) expect(outcome.message).toMatch(new RegExp(`cut [0-9]+ ms ago and its tree still runs: .*pid [0-9]+ \\(${role}\\)`));
    expect(outcome.message).toMatch(/not re-established either/);
  });

  test('an adapter that SIGKILLs the tree of a cut link at once fails: no SIGTERM first', { timeout: TEST_TIMEOUT_MS }, async () => {
    const outcome = await linkLost('killed');
    expect(outcome.status, outcome.message).toBe('fail');
    expect(outcome.message).toMatch(/ended without SIGTERM first/);
  });

  test('an adapter module without a sever hook (local processes hold no link) is skipped with that reason', { timeout: TEST_TIMEOUT_MS }, async () => {
    const outcome = await linkLost('no-hook');
    expect(outcome.status).toBe('skipped');
    expect(outcome.message).toMatch(/exports no `conformanceHooks.sever`: an adapter whose commands hold no link/);
  });
});

// Spec 1.4 section 9.11: an owner process really crashed (SS-OWNER-1), and the bound stated (SS-OWNER-2).
describe('owner loss', () => {
  test('the real local adapter passes owner.crash and owner.bound-stated; the owner module comes from the owner hook too', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('owner-local');
    try {
      const report = await runConformance({
        factory: () => lab.local(),
        hooks: { owner: () => ({ module: OWNER_LAB, env: labEnv('local', lab.marker) }) },
        include: ['owner.crash', 'owner.bound-stated', 'pty.owner-crash'],
        concurrency: SERIAL,
      });
      expect(report.cases.filter((c) => c.status !== 'disabled').map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`)).toEqual([
        'owner.bound-stated: pass ',
        'owner.crash: pass ',
        ...(hasCapability(LOCAL_CAPABILITIES, 'pty') ? ['pty.owner-crash: pass '] : [expect.stringMatching(/^pty\.owner-crash: skipped /)]),
      ]);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });

  test("an adapter whose commands outlive a crashed owner (the plain local backend without its guardian) fails owner.crash naming the survivors, and owner.bound-stated", { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('owner-unguarded');
    try {
      const report = await runConformance({
        factory: () => lab.track(labSandbox('unguarded', lab.marker)),
        ownerModule: OWNER_LAB,
        hooks: { owner: () => ({ env: labEnv('unguarded', lab.marker) }) },
        include: ['owner.crash', 'owner.bound-stated'],
        concurrency: SERIAL,
      });
      const byId = new Map(report.cases.map((c) => [c.id, c]));
      const crash = byId.get('owner.crash');
      expect(crash?.status, crash?.message).toBe('fail');
      // Every process of the tree survived, and the message names each by its role.
      for (const role of ['owner-leader', 'owner-background', 'owner-foreground']) expect(crash?.message).toMatch(new RegExp(`killed with SIGKILL .* still runs: .*pid [0-9]+ \\(${role}\\)`));
      expect(crash?.message).toMatch(/kit's fallback.*states no `termination.ownerLossMs`/);
      expect(byId.get('owner.bound-stated')?.message).toMatch(/states no `termination.ownerLossMs`/);
      expect(byId.get('owner.bound-stated')?.status).toBe('fail');
      expect(report.ok).toBe(false);
      // The kit killed the tree it could not see end: nothing of the lab's is left (cleanup below).
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });

  test('an adapter that states the bound the real one keeps, and does not keep it, passes owner.bound-stated and fails owner.crash within that bound', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('owner-unkept');
    try {
      const report = await runConformance({
        factory: () => lab.track(labSandbox('unkept', lab.marker)),
        ownerModule: OWNER_LAB,
        hooks: { owner: () => ({ env: labEnv('unkept', lab.marker) }) },
        include: ['owner.crash', 'owner.bound-stated'],
        concurrency: SERIAL,
      });
      const byId = new Map(report.cases.map((c) => [c.id, c]));
      expect(byId.get('owner.bound-stated')?.status, byId.get('owner.bound-stated')?.message).toBe('pass');
      const crash = byId.get('owner.crash');
      expect(crash?.status, crash?.message).toBe('fail');
      for (const role of ['owner-leader', 'owner-background', 'owner-foreground']) expect(crash?.message).toMatch(new RegExp(`killed with SIGKILL .* still runs: .*pid [0-9]+ \\(${role}\\)`));
      // Held to the bound it states, not the kit's fallback.
      expect(crash?.message).not.toMatch(/fallback/);
      expect(report.ok).toBe(false);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });

  unless(test, hasCapability(LOCAL_CAPABILITIES, 'pty') ? undefined : 'the local adapter has no terminals here (no pseudo-terminal library)')(
    "an adapter whose terminal commands outlive a crashed owner (the local adapter starting them without its guardian) passes owner.crash and fails pty.owner-crash naming the session's survivors",
    { timeout: TEST_TIMEOUT_MS },
    async ({ expect }) => {
      const lab = new Lab('owner-terminal-unguarded');
      try {
        const report = await runConformance({
          factory: () => lab.track(labSandbox('terminal-unguarded', lab.marker)),
          ownerModule: OWNER_LAB,
          hooks: { owner: () => ({ env: labEnv('terminal-unguarded', lab.marker) }) },
          include: ['owner.crash', 'pty.owner-crash'],
          concurrency: SERIAL,
        });
        const byId = new Map(report.cases.map((c) => [c.id, c]));
        expect(byId.get('owner.crash')?.status, byId.get('owner.crash')?.message).toBe('pass');
        const crash = byId.get('pty.owner-crash');
        expect(crash?.status, crash?.message).toBe('fail');
        // Each ignores SIGHUP: the hangup of the terminal whose owner died ended none of them.
        for (const role of ['owner-leader', 'owner-background', 'owner-foreground']) {
          expect(crash?.message).toMatch(new RegExp(`killed with SIGKILL .* its command on a terminal still runs: .*pid [0-9]+ \\(${role}\\)`));
        }
        expect(report.ok).toBe(false);
      } finally {
        expect(await lab.cleanup()).toEqual([]);
      }
    },
  );

  test('without an owner module, owner.crash is a harness error that names ownerModule and the owner hook, never a verdict', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('owner-no-module');
    try {
      const report = await runConformance({ factory: () => lab.local(), include: ['owner.crash'], concurrency: SERIAL });
      const crash = report.cases.find((c) => c.id === 'owner.crash');
      expect(crash?.status).toBe('error');
      expect(crash?.message).toMatch(/give `ownerModule`.*`conformanceHooks.owner`/);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });

  test('an owner process that fails is a harness error naming its error, never a verdict', { timeout: TEST_TIMEOUT_MS }, async ({ expect }) => {
    const lab = new Lab('owner-fails');
    try {
      const report = await runConformance({
        factory: () => lab.local(),
        ownerModule: OWNER_LAB,
        hooks: { owner: () => ({ env: { ...labEnv('local', lab.marker), SANDSTREAM_OWNER_LAB: 'nowhere' } }) },
        include: ['owner.crash'],
        concurrency: SERIAL,
      });
      const crash = report.cases.find((c) => c.id === 'owner.crash');
      expect(crash?.status).toBe('error');
      expect(crash?.message).toMatch(/the owner process \(.*owner-lab-adapter\.mjs.*\) failed: .*unknown kind "nowhere"/);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });
});

describe.concurrent('broken adapters', () => {
  // A run-only adapter: every case that needs a Process is skipped, and the rest pass.
  test(
    'without "streaming", the cases that call stream() are skipped rather than failed',
    { timeout: TEST_TIMEOUT_MS },
    async ({ expect }) => {
      const lab = new Lab('run-only');
      try {
        const report = await runConformance({
          concurrency: SERIAL,
          factory: () => lab.local({ capabilities: { streaming: false } }),
        });
        expect(report.cases.filter((c) => c.status === 'fail').map((c) => `${c.id}: ${c.message}`)).toEqual([]);
      } finally {
        await lab.cleanup();
      }
    },
  );

  // The report states a valid manifest even when the adapter's is not; the case says it is not.
  test(
    'an adapter whose manifest fails the schema gets a report in which capabilities.manifest fails',
    { timeout: TEST_TIMEOUT_MS },
    async ({ expect }) => {
      const adapter = BROKEN_ADAPTERS.find((a) => a.name === 'manifest-invalid')!;
      const lab = new Lab('manifest-report');
      try {
        const report = await runConformance({ factory: () => adapter.create(lab), include: ['capabilities.manifest'], concurrency: SERIAL });
        expect(report.cases.find((c) => c.id === 'capabilities.manifest')?.status).toBe('fail');
      } finally {
        await lab.cleanup();
      }
    },
  );

  // Slow tests first, so that they overlap the quick ones instead of trailing.
  const ordered = [...BROKEN_ADAPTERS].sort((a, b) => Number(b.slow === true) - Number(a.slow === true));
  for (const adapter of ordered) {
    const catchers = Object.keys(adapter.caughtBy).join(', ');
    const lacking = adapter.needs !== undefined && !LOCAL_CAPABILITIES[adapter.needs] ? `the local adapter does not advertise ${adapter.needs} on this machine` : undefined;
    unless(test, lacking)(`${adapter.name} (${adapter.defect}) is caught by ${catchers}`, { timeout: TEST_TIMEOUT_MS }, ({ expect }) =>
      expectCaught(adapter, expect),
    );
  }
});

type Survivors = ReturnType<typeof markedProcesses>;
/** How long the file's last sweep waits for what it killed to be gone before failing, naming it. */
const SWEEP_BOUND_MS = 20_000;

afterAll(async () => {
  // Broken adapters leak on purpose, and a case that timed out may still be
  // finishing when its test ends; each lab cleans up after itself, and this
  // sweep makes sure the file leaves nothing behind: everything marked by a
  // lab of this file is killed until two looks in a row find nothing (a test
  // run beside this one has labs of its own, which are left alone). Only
  // what cannot be killed fails the file, and only once a generous bound has
  // passed: SIGKILL is delivered when the kernel next runs the process, which
  // on a loaded machine is not at once. (The real adapter's cleanliness is
  // asserted by its own tests above, not here.)
  const ours = (): Survivors => [...Lab.markers].flatMap((marker) => markedProcesses(marker));
  let left: Survivors = [];
  let quiet = 0;
  await waitFor(
    () => {
      left = ours();
      killEach(left);
      quiet = left.length === 0 ? quiet + 1 : 0;
      return quiet >= 2;
    },
    SWEEP_BOUND_MS,
    () => `processes survived SIGKILL after the broken-adapter tests: ${JSON.stringify(left)}`,
  );
}, SWEEP_BOUND_MS + 10_000);
