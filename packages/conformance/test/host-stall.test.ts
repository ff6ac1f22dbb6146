/**
 * The kit's timing cases judge the sandbox, not the host the kit runs on.
 * A stall of the kit's own event loop between the command's report of
 * SIGTERM and its end (another test suite on the same two cores) once made
 * a correct adapter fail `termination.settings`: the report and the end
 * were seen together, so SIGKILL looked immediate (found in CI, in the
 * run-only broken-adapter test). A loaded sandbox, whose shell ran its
 * SIGTERM trap late, once made the real local adapter fail
 * `teardown.sigkill-after-grace` beside a second test suite: "killed 162 ms
 * after SIGTERM reached it, before the grace period (300 ms ...)".
 */
import { describe, expect, test } from 'vitest';
import type { ConformanceReport, RunOptions } from '@sandstream/types';
import { runConformance } from '../src/index.js';
import { GRACE_MS, Lab } from './broken/index.js';
import { wrapSandbox } from './broken/wrap.js';

/** Both grace-period cases passed, and only they ran. */
function expectBothPass(report: ConformanceReport): void {
  const selected = report.cases.filter((c) => c.status !== 'disabled');
  expect(selected.map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`.trim()).sort()).toEqual(['teardown.sigkill-after-grace: pass', 'termination.settings: pass']);
}

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
      expectBothPass(report);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });
});

describe('a sandbox whose shell runs its trap late', () => {
  // Half the grace period: the trap then runs with half of it left, which neither the kit's spacing
  // nor the ticks after it can show as the whole period.
  const LATE_MS = GRACE_MS / 2;
  const TRAP = `trap '{ read n _ </proc/uptime; }`;

  test('a correct adapter still passes the grace-period cases', { timeout: 120_000 }, async () => {
    const lab = new Lab('late-trap');
    let delayed = 0;
    try {
      const report = await runConformance({
        concurrency: 1,
        include: ['termination.settings', 'teardown.sigkill-after-grace'],
        factory: () =>
          wrapSandbox(lab.local(), {
            run(inner, argv, options?: RunOptions) {
              // A loaded sandbox, as the command sees it: its shell gets to its SIGTERM trap LATE_MS after
              // the signal came (a CPU busy elsewhere). Its stamps show it; the adapter is correct.
              if (!argv.some((arg) => arg.includes(TRAP))) return inner.run(argv, options);
              delayed++;
              return inner.run(
                argv.map((arg) => arg.replace(TRAP, `trap 'sleep ${LATE_MS / 1000}; { read n _ </proc/uptime; }`)),
                options,
              );
            },
          }),
      });
      expect(delayed, 'no trap was delayed: the test proves nothing').toBe(2);
      expectBothPass(report);
    } finally {
      expect(await lab.cleanup()).toEqual([]);
    }
  });
});
