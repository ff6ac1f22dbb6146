import type { Capability } from '@sandstream/types';
import type { CaseContext } from './context.js';
import type { ConformanceHooks } from './hooks.js';

/**
 * One conformance case. Ids are stable and dotted (`teardown.break`). The
 * case belongs to the spec section under whose heading the tag of its first
 * requirement stands (`caseSection` in `sections.ts`); the other requirements
 * it proves may be stated in other sections.
 */
export interface ConformanceCase {
  readonly id: string;
  /**
   * Opens with a quote of the requirement it proves, then says what the case
   * itself checks: `"MUST terminate the command before control leaves the
   * loop": break out of for await`. The quote, in double quotes, is a
   * fragment of at least three words of the statement of one of its
   * `requirements` (REQUIREMENTS in `requirements.ts`), word for word as
   * spec.md writes it but without its backticks (`stream()` quoted as
   * stream()), runs of whitespace read as one space. `test/case-titles.test.ts`
   * holds every case to this.
   */
  readonly title: string;
  /** The spec requirement ids this case proves; at least one. */
  readonly requirements: readonly string[];
  /**
   * Positive case: runs only when the adapter advertises all of these; it is
   * `skipped` otherwise (optional capabilities only).
   */
  readonly needs?: readonly Capability[];
  /**
   * Runs only when the adapter module exports these hooks; `skipped`
   * otherwise, with the hook's reason: for a hook an adapter without the
   * thing it acts on leaves out (the `sever` hook of an adapter whose
   * commands hold no link).
   */
  readonly needsHooks?: readonly { readonly hook: keyof ConformanceHooks; readonly without: string }[];
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
