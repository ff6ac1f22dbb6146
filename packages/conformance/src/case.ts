import type { Capability } from '@sandstream/types';
import type { CaseContext } from './context.js';

/**
 * One conformance case. Ids are stable and dotted (`teardown.break`). The
 * case belongs to the spec section under whose heading the tag of its first
 * requirement stands (`caseSection` in `sections.ts`); the other requirements
 * it proves may be stated in other sections.
 */
export interface ConformanceCase {
  readonly id: string;
  /** Quotes or paraphrases the requirement it proves. */
  readonly title: string;
  /** The spec requirement ids this case proves; at least one. */
  readonly requirements: readonly string[];
  /**
   * Positive case: runs only when the adapter advertises all of these; it is
   * `skipped` otherwise (optional capabilities only).
   */
  readonly needs?: readonly Capability[];
  /**
   * Negative case: runs only when the adapter does NOT advertise this
   * capability, and proves the typed refusal.
   */
  readonly without?: Capability;
  /**
   * Set when the case must run with no other case beside it, saying why
   * (it measures time, or moves enough data to starve its neighbours).
   */
  readonly runsAlone?: string;
  /**
   * Codes of the process warnings the case provokes on purpose (a leak it
   * sets up to see the safety net's warning): attributed to this case, they
   * are expected, and no reporter shows them as problems.
   */
  readonly expectedWarnings?: readonly string[];
  /** Milliseconds before the case fails as hung; default from the run options. */
  readonly timeoutMs?: number;
  readonly run: (ctx: CaseContext) => Promise<void>;
}

/** Identity helper that keeps case literals type-checked. */
export function defineCase(spec: ConformanceCase): ConformanceCase {
  return spec;
}
