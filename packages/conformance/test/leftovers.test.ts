/**
 * A kit run leaves nothing behind, even against a broken adapter: after a
 * case that failed or timed out, the kit kills what the case started,
 * through a fresh sandbox, and says so in the case's message.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { runConformance } from '../src/index.js';
import { Lab } from './broken/index.js';
import { hangingTeardownSandbox } from './broken/leftovers.js';

const lab = new Lab('leftovers');
afterAll(() => lab.cleanup());

describe('after a timed-out teardown case', () => {
  test('the loops it started are killed, and the report says the kit had to', { timeout: 60_000 }, async () => {
    const report = await runConformance({ factory: () => hangingTeardownSandbox(lab), include: ['teardown.dispose-never-iterated'], caseTimeoutMs: 3_000 });
    const entry = report.cases.find((c) => c.id === 'teardown.dispose-never-iterated')!;
    expect(entry.status).toBe('fail');
    expect(entry.message).toMatch(/did not finish within 3000 ms/);
    expect(entry.message).toMatch(/after the case, the kit had to kill [1-9]\d* process(es)? it had left running \(pid [\d, ]+\), through a fresh sandbox/);
    // The tree (leader, child, grandchild: all carry the scratch directory in their argv) is gone.
    expect(lab.survivors().filter((s) => s.cmdline.includes('heartbeat'))).toEqual([]);
  });
});
