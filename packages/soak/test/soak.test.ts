/**
 * The short form of the soak: a few hundred processes per adapter, each
 * with a random behaviour and ending, and every check of the long form
 * (survivors, descriptors and handles, the heap, unhandled rejections,
 * byte-exact output). The long form is `npm run soak` (see the package README).
 */
import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { ADAPTERS, BACKGROUND_ENDINGS, endingsFor, formatReport, runSoak } from '../src/index.js';
import { unknownViolations } from './known.js';
import { gvisorMissingHere, missingHere } from './missing-here.js';


const COUNT = Number(process.env['SANDSTREAM_SOAK_COUNT'] ?? 200);
const SEED = Number(process.env['SANDSTREAM_SOAK_SEED'] ?? 7);

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
      // The local adapter has attach (ADR-0036): every background ending ran, with no violation.
      if (adapter === 'local') {
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

  // Docker under gVisor (ADR-0035): short, a command there costs several times one under runc.
  // The process checks read the container's own /proc (the host's shows none of its processes).
  const GVISOR_COUNT = Math.min(COUNT, 30);
  unless(it, gvisorMissingHere())(`docker under gVisor (runsc): ${GVISOR_COUNT} processes, seed ${SEED}, no violation`, async () => {
    const report = await runSoak({ adapter: 'docker', dockerRuntime: 'runsc', count: GVISOR_COUNT, concurrency: 10, seed: SEED, deadlineMs: 150_000, processBoundMs: 60_000 });
    console.log(formatReport(report));
    expect(unknownViolations('docker', report.violations.map((v) => `[${v.kind}] ${v.message}`))).toEqual([]);
    expect(report.finished).toBe(GVISOR_COUNT);
    expect(endingsFor(report.capabilities).filter((ending) => report.endings[ending] === 0)).toEqual([]);
    expect(report.ownerLoss.gone.count).toBe(report.endings['owner-killed']);
  }, 180_000);
});
