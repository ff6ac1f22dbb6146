/**
 * teardown.close on both topologies (ADR-0011): a shared host, where a second
 * sandbox sees the first's processes, and an isolated backend, where each
 * sandbox is its own PID namespace and only the adapter's attach hook can
 * look inside after close(). A close() that reports its commands ended while
 * they run on must fail on both; a correct close() must pass on both; and
 * where the kit cannot look, it says so instead of passing.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { captureWarnings, type CapturedWarnings } from '@sandstream/test-support/warnings';
import type { ConformanceReport, Sandbox } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { runConformance, type ConformanceHooks } from '../src/index.js';
import { Lab } from './broken/index.js';
import { canMakePidNamespaces, isolatedFactory, isolatedHooks, topologySandbox, type CloseBehaviour } from './broken/topology.js';

const TIMEOUT = 60_000;
const labs: Lab[] = [];

// The leaking fixtures drop their leaked Processes once the case is over, and the collector
// this file runs collects them: the runtime's leak warnings for those commands are expected here.
let leakWarnings: CapturedWarnings | undefined;
beforeAll(() => {
  leakWarnings = captureWarnings(['SANDSTREAM_PROCESS_LEAKED']);
});
afterAll(() => {
  leakWarnings?.release();
  // Every one names a command teardown.close started (its token), none anything else.
  expect(leakWarnings?.warnings.filter((w) => !w.message.includes('sandstream-close-')).map((w) => w.message)).toEqual([]);
});
afterEach(async () => {
  for (const lab of labs.splice(0)) await lab.cleanup();
});
function newLab(name: string): Lab {
  const lab = new Lab(`topology-${name}`);
  labs.push(lab);
  return lab;
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * Runs teardown.close with the garbage collector running every 100 ms. A leaked command must
 * outlive the collection of its Process objects, as a remote one would: the local runtime ends
 * the command of a collected Process, and a leaking fixture that let it do so made the sweep's
 * count depend on when V8 collected (2 killed instead of 3, under load). Every 100 ms still fails
 * that fixture each time (tried); every 10 ms cost this file twice its CPU (a full collection each).
 */
async function close(factory: () => Promise<Sandbox> | Sandbox, hooks?: ConformanceHooks): Promise<ConformanceReport['cases'][number]> {
  const collector = setInterval(gc, 100);
  try {
    const report = await runConformance({ factory, ...(hooks ? { hooks } : {}), include: ['teardown.close'], caseTimeoutMs: 20_000 });
    return report.cases.find((c) => c.id === 'teardown.close')!;
  } finally {
    clearInterval(collector);
  }
}

/** Live processes of the lab whose command line carries the case's token (the leaked commands). */
function leaked(lab: Lab): string[] {
  return lab.survivors().map((s) => s.cmdline).filter((cmd) => cmd.includes('sandstream-close-'));
}

describe('on a shared host', () => {
  test('a correct close() passes, observed from a second sandbox', { timeout: TIMEOUT }, async () => {
    const lab = newLab('shared-correct');
    const entry = await close(() => topologySandbox(lab, undefined, 'keeps-environment'));
    expect(entry.status, entry.message).toBe('pass');
  });

  test('a close() that reports its commands ended while they run on fails, and the kit kills them afterwards', { timeout: TIMEOUT }, async () => {
    const lab = newLab('shared-leaks');
    const entry = await close(() => topologySandbox(lab, undefined, 'leaks'));
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/close\(\) resolved while pid \d+, a command it started, still runs/);
    expect(entry.message).toMatch(/the kit had to kill 3 processes it had left running \(pid [\d, ]+\), through a fresh sandbox/);
    expect(leaked(lab)).toEqual([]);
  });
});

unless(
  describe,
  canMakePidNamespaces() ? undefined : "this machine cannot make PID namespaces ('unshare --pid --fork --mount-proc' failed)",
)('on an isolated backend (a PID namespace per sandbox)', () => {
  test('without an attach hook the kit says it cannot observe, for a correct and a leaking close() alike', { timeout: TIMEOUT }, async () => {
    for (const behaviour of ['owns-environment', 'leaks'] satisfies CloseBehaviour[]) {
      const lab = newLab(`isolated-no-attach-${behaviour}`);
      const entry = await close(isolatedFactory(lab, behaviour));
      // Not a pass: from a second namespace, a leaked command looks exactly like a terminated one.
      expect(entry.status, `${behaviour}: ${entry.message}`).toBe('error');
      expect(entry.message).toMatch(/a second sandbox does not see pid \d+, a running command of the first.*export `conformanceHooks\.attach`/);
    }
  });

  test('with the attach hook, a close() that destroys the environment passes: the observer finds it gone', { timeout: TIMEOUT }, async () => {
    const lab = newLab('isolated-owns');
    const entry = await close(isolatedFactory(lab, 'owns-environment'), isolatedHooks(lab));
    expect(entry.status, entry.message).toBe('pass');
  });

  test('with the attach hook, a close() that ends its commands in a surviving environment passes', { timeout: TIMEOUT }, async () => {
    const lab = newLab('isolated-keeps');
    const entry = await close(isolatedFactory(lab, 'keeps-environment'), isolatedHooks(lab));
    expect(entry.status, entry.message).toBe('pass');
  });

  test('with the attach hook, a close() that leaks fails, and the kit kills the leak through the hook', { timeout: TIMEOUT }, async () => {
    const lab = newLab('isolated-leaks');
    const entry = await close(isolatedFactory(lab, 'leaks'), isolatedHooks(lab));
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/close\(\) resolved while pid \d+, a command it started, still runs/);
    expect(entry.message).toMatch(/the kit had to kill 3 processes it had left running \(pid [\d, ]+\), through a handle from the attach hook/);
    expect(leaked(lab)).toEqual([]);
  });
});
