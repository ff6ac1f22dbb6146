/**
 * The short form of the soak: a few hundred processes per adapter, each
 * with a random behaviour and ending, and every check of the long form
 * (survivors, descriptors and handles, the heap, unhandled rejections,
 * byte-exact output). The long form is `npm run soak` (see the package README).
 */
import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { ADAPTERS, BACKGROUND_ENDINGS, endingsFor, formatReport, planProcess, runSoak, type PlanCapabilities } from '../src/index.js';
import { unknownViolations } from './known.js';
import { gvisorMissingHere, missingHere } from './missing-here.js';


const COUNT = Number(process.env['SANDSTREAM_SOAK_COUNT'] ?? 200);
const SEED = Number(process.env['SANDSTREAM_SOAK_SEED'] ?? 7);

/** The first seed from `from` whose first `count` processes draw every ending a target with `capabilities` gets. */
function coveringSeed(from: number, count: number, capabilities: PlanCapabilities): number {
  const endings = endingsFor(capabilities);
  for (let seed = from; seed < from + 10_000; seed++) {
    const drawn = new Set(Array.from({ length: count }, (_, index) => planProcess(seed, index, capabilities).ending.kind));
    if (endings.every((ending) => drawn.has(ending))) return seed;
  }
  throw new Error(`no seed from ${from} draws every ending in ${count} processes`);
}

describe('soak, short form', () => {
  it('runs with global.gc exposed, so the heap is checked', () => {
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('function');
  });

  for (const adapter of ADAPTERS) {
    unless(it, missingHere(adapter))(`${adapter}: ${COUNT} processes, seed ${SEED}, no violation`, async () => {
      const report = await runSoak({ adapter, count: COUNT, concurrency: 10, seed: SEED, deadlineMs: 150_000, processBoundMs: 60_000 });
      console.log(formatReport(report));
      const violations = report.violations.map((v) => `[${v.kind}] ${v.message}`);
      expect(unknownViolations(adapter, violations)).toEqual([]);
      expect(report.finished).toBe(COUNT);
      // The plan reads a good share of the processes to their end, and ends the rest early in every way the target has.
      expect(report.verified.processes).toBeGreaterThan(COUNT / 4);
      expect(endingsFor(report.capabilities).filter((ending) => report.endings[ending] === 0)).toEqual([]);
      // The local and SSH adapters have attach (ADR-0036): every background ending ran, with no violation.
      if (adapter === 'local' || adapter === 'ssh') {
        expect(report.capabilities.attach).toBe(true);
        expect(BACKGROUND_ENDINGS.filter((ending) => report.endings[ending] === 0)).toEqual([]);
      }
      // Spec 1.4: owners killed with SIGKILL, and every one of their trees seen going within the bound.
      expect(report.endings['owner-killed']).toBeGreaterThan(0);
      expect(report.ownerLoss.statedMs).toBeGreaterThan(0);
      expect(report.ownerLoss.gone.count).toBe(report.endings['owner-killed']);
      expect(report.ownerLoss.gone.max).toBeLessThanOrEqual(report.ownerLoss.boundMs);
      expect(report.heap).toBeDefined();
    }, 180_000);
  }

  // Docker under gVisor (ADR-0035): short, a command there costs several times one under runc, and
  // three at a time (gVisor's ptrace platform takes the CPU the rest would wait for). The process
  // checks read the container's own /proc (the host's shows none of its processes). Its seed is the
  // first from SEED whose processes draw every ending, so that the short run still ends commands in
  // every way the target has.
  const GVISOR_COUNT = Math.min(COUNT, 30);
  const GVISOR_SEED = coveringSeed(SEED, GVISOR_COUNT, { binary: true, stdin: true, attach: true });
  unless(it, gvisorMissingHere())(`docker under gVisor (runsc): ${GVISOR_COUNT} processes, seed ${GVISOR_SEED}, no violation`, async () => {
    const report = await runSoak({ adapter: 'docker', dockerRuntime: 'runsc', count: GVISOR_COUNT, concurrency: 3, seed: GVISOR_SEED, deadlineMs: 150_000, processBoundMs: 60_000 });
    console.log(formatReport(report));
    // Open under gVisor (adapter-docker's README): a command that ends before its supervisor finds
    // it leaves what it started running until close(), which ends it; the supervisor cannot learn
    // its pid there. Finding its session through its tag ended those trees, but made a command of
    // a killed container hang (the fault tests), and was backed out. Printed, and let through.
    const gvisorOpen = /^\[survivors\] \d+ process\(es\) in the emulator's table after the run: \d+ (sh -c sleep 600 & wait|sleep 600)(; \d+ (sh -c sleep 600 & wait|sleep 600))*$/;
    const violations = unknownViolations('docker', report.violations.map((v) => `[${v.kind}] ${v.message}`));
    for (const violation of violations.filter((v) => gvisorOpen.test(v))) console.log(`open under gVisor, let through: ${violation}`);
    expect(violations.filter((v) => !gvisorOpen.test(v))).toEqual([]);
    expect(report.finished).toBe(GVISOR_COUNT);
    expect(endingsFor(report.capabilities).filter((ending) => report.endings[ending] === 0)).toEqual([]);
    expect(report.ownerLoss.gone.count).toBe(report.endings['owner-killed']);
  }, 180_000);
});
