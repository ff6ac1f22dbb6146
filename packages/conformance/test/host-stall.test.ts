/**
 * The kit's timing cases judge the sandbox, not the host the kit runs on.
 * A stall of the kit's own event loop between the command's report of
 * SIGTERM and its end (another test suite on the same two cores) once made
 * a correct adapter fail `termination.settings`: the report and the end
 * were seen together, so SIGKILL looked immediate (found in CI, in the
 * run-only broken-adapter test).
 */
import { describe, expect, test } from 'vitest';
import type { RunOptions } from '@sandstream/types';
import { runConformance } from '../src/index.js';
import { GRACE_MS, Lab } from './broken/index.js';
import { wrapSandbox } from './broken/wrap.js';

/** Keeps this process's event loop busy, as a loaded machine does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('a host whose event loop stalls', () => {
  // 'auto' on the local backend runs the two side by side (they only wait): each stall then falls in both.
  test.for<1 | 'auto'>([1, 'auto'])('when SIGTERM is reported, a correct adapter still passes the grace-period cases (concurrency %s)', { timeout: 120_000 }, async (concurrency) => {
    const lab = new Lab('host-stall');
    let stalls = 0;
    try {
      const report = await runConformance({
        concurrency,
        include: ['termination.settings', 'teardown.sigkill-after-grace'],
        factory: () =>
          wrapSandbox(lab.local(), {
            run(inner, argv, options?: RunOptions) {
              const onOutput = options?.onOutput;
              if (onOutput === undefined) return inner.run(argv, options);
              const decoder = new TextDecoder();
              let seen = '';
              return inner.run(argv, {
                ...options,
                onOutput(chunk) {
                  seen += decoder.decode(chunk.data, { stream: true });
                  // Once per command, as the report of SIGTERM comes in: longer than the grace period.
                  if (seen.includes('term') && !seen.includes('\u0000stalled')) {
                    seen += '\u0000stalled';
                    stalls++;
                    stall(GRACE_MS + 200);
                  }
                  onOutput(chunk);
                },
              });
            },
          }),
      });
      expect(stalls, 'the host never stalled: the test proves nothing').toBeGreaterThanOrEqual(2);
      const selected = report.cases.filter((c) => c.status !== 'disabled');
      expect(selected.map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`.trim()).sort()).toEqual([
        'teardown.sigkill-after-grace: pass',
        'termination.settings: pass',
      ]);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });
});
