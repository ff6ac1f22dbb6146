/**
 * The `owner-killed` ending can fail: against the local backend without its
 * guardian (`localBackend(options, { ownerGuard: false })`, wrapped by
 * `defineSandbox`, in every owner process), a command whose owner is killed
 * with SIGKILL lives on, and the run names it by pid; the runner kills it by
 * pid all the same, so nothing of the run is left.
 */
import { describe, expect, it } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';
import { MARKER, planProcess, runSoak } from '../src/index.js';

describe('the owner-killed ending', () => {
  it('reports a tree that outlives its killed owner, naming its pids, and leaves nothing running', async () => {
    // Seed 9, on the local target (with pty since spec 1.5): processes 5 (forks children), 13
    // (binary output) and 14 (much output) have owner-killed endings.
    const count = 16;
    const report = await runSoak({ adapter: 'local', count, concurrency: 4, seed: 9, ownerGuard: false, settleBoundMs: 3_000 });
    const owned = Array.from({ length: count }, (_, i) => planProcess(9, i, report.capabilities))
      .filter((plan) => plan.ending.kind === 'owner-killed')
      .map((plan) => plan.index);
    expect(owned).toEqual([5, 13, 14]);
    expect(report.endings['owner-killed']).toBe(owned.length);
    const leaks = report.violations.filter((v) => v.kind === 'owner-loss');
    // A command still writing when its owner died may die of SIGPIPE; one sleeping out its lingering never does.
    expect(leaks.length).toBeGreaterThan(0);
    for (const leak of leaks) {
      expect(leak.message).toMatch(/^process (5|13|14) \(seed 9,.*ending \{"kind":"owner-killed"/);
      expect(leak.message).toMatch(/killed with SIGKILL \d+ ms ago and its foreground command still runs: pid \d+ /);
    }
    // The only violations are the leaks: the stated bound is the guarded sandbox's, and the runner killed the survivors by pid.
    expect(report.violations.filter((v) => v.kind !== 'owner-loss')).toEqual([]);
    expect(report.ownerLoss.statedMs).toBeDefined();
    expect(markedProcesses(MARKER, report.runId)).toEqual([]);
  }, 120_000);
});
