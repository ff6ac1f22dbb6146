import type { Sandbox } from '@sandstream/types';
import { HarnessError } from './assert.js';

/** The spec's defaults, for a sandbox that states no termination settings. */
export const SPEC_TERMINATION = { graceMs: 2_000, killWaitMs: 5_000 } as const;

/** The termination settings a case measures against, and where they came from. */
export interface Termination {
  /** SIGTERM-to-SIGKILL grace period in ms. */
  readonly graceMs: number;
  /** Wait for an exit report after SIGKILL, in ms. */
  readonly killWaitMs: number;
  /** Spec 1.4: the bound within which a foreground command's tree is gone once its owner is lost, where the sandbox states it. */
  readonly ownerLossMs?: number;
  /** Where the values came from, in words ("the sandbox's `termination`", ...). */
  readonly source: string;
}

/** "grace period 300 ms, kill wait 5000 ms (from the sandbox's `termination`)". */
export function describeTermination(termination: Termination): string {
  return `grace period ${termination.graceMs} ms, kill wait ${termination.killWaitMs} ms (from ${termination.source})`;
}

function isDuration(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/**
 * The termination settings of `sandbox`: its own `termination` (spec 1.1,
 * SS-TERM-1) when it states one; otherwise the run's `graceMs` option; else
 * the spec's defaults. An option that contradicts what the sandbox states is
 * a harness error rather than a silent choice between the two.
 */
export function terminationOf(sandbox: Sandbox, option: { graceMs?: number | undefined; label: string }): Termination {
  // Read defensively: a 1.0 adapter has no such property, and its value is the adapter's claim.
  const stated = (sandbox as { termination?: unknown }).termination;
  if (stated !== undefined && stated !== null) {
    const { graceMs, killWaitMs, ownerLossMs } = stated as { graceMs?: unknown; killWaitMs?: unknown; ownerLossMs?: unknown };
    if (!isDuration(graceMs) || !isDuration(killWaitMs)) {
      throw new HarnessError(
        `the sandbox's \`termination\` is malformed (${JSON.stringify(stated)}): graceMs and killWaitMs must be non-negative numbers of ms`,
      );
    }
    if (option.graceMs !== undefined && option.graceMs !== graceMs) {
      throw new HarnessError(
        `${option.label} says ${option.graceMs} ms but the sandbox's \`termination\` states a grace period of ${graceMs} ms: drop the option, the kit reads the sandbox's`,
      );
    }
    // ownerLossMs is judged by owner.bound-stated (SS-OWNER-2), not here: kept only when it is a duration.
    return { graceMs, killWaitMs, ...(isDuration(ownerLossMs) ? { ownerLossMs } : {}), source: "the sandbox's `termination`" };
  }
  if (option.graceMs !== undefined) {
    return { graceMs: option.graceMs, killWaitMs: SPEC_TERMINATION.killWaitMs, source: `${option.label}; the kill wait is the spec's default, since the sandbox states no \`termination\`` };
  }
  return { ...SPEC_TERMINATION, source: "the spec's defaults, since the sandbox states no `termination`" };
}
