import { HarnessError, runConformance, type ConformanceOptions } from '@sandstream/conformance';
import type { ConformanceReport } from '@sandstream/types';
import type { KitTarget } from './vendor.js';

/**
 * Concurrency of every run: fixed, so that which cases overlap does not
 * depend on the round trip the kit measured at the start (`'auto'` picks 1
 * or 4 by it), and the verdicts do not depend on the moment.
 */
export const RUN_CONCURRENCY = 4;

/** Runs the kit on a target: every case, nothing disabled, unless `include` picks some. */
export async function runKit(target: KitTarget, extra: Pick<ConformanceOptions, 'onCaseEnd' | 'include'> = {}): Promise<ConformanceReport> {
  try {
    return await runConformance({ factory: target.factory, hooks: target.hooks, concurrency: RUN_CONCURRENCY, ...extra });
  } catch (error) {
    // An adapter may raise where no caller can catch it outside every case: the run still has its report.
    if (error instanceof HarnessError && (error as HarnessError & { report?: ConformanceReport }).report !== undefined) {
      return (error as HarnessError & { report: ConformanceReport }).report;
    }
    throw error;
  }
}
