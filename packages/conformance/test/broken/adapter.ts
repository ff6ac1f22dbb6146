import type { Capability, Sandbox } from '@sandstream/types';
import type { Lab } from './lab.js';

/**
 * A deliberately broken adapter: the local adapter with exactly one defect,
 * and the conformance cases that must catch it.
 */
export interface BrokenAdapter {
  /** Short, stable name. */
  readonly name: string;
  /** The defect, in one sentence. */
  readonly defect: string;
  /** A capability the catching cases need; the test is skipped where the local adapter lacks it. */
  readonly needs?: Capability;
  /** Builds one sandbox; called for every case, as a factory is. */
  readonly create: (lab: Lab) => Sandbox;
  /**
   * The cases that must fail, each with a pattern its failure message must
   * match, so that a case failing for an unrelated reason does not count.
   */
  readonly caughtBy: Readonly<Record<string, RegExp>>;
  /** Other selected cases that fail too, as a consequence of the same defect. */
  readonly alsoFails?: readonly string[];
  /** Cases run alongside that must still pass: the rest of the adapter is intact. */
  readonly stillPasses?: readonly string[];
  /** Takes several seconds (a hang cut short, a long poll): its test is started first. */
  readonly slow?: boolean;
  /** Per-case time limit for the run (default 20000 ms, for a loaded machine); low for defects that hang. */
  readonly caseTimeoutMs?: number;
  /**
   * Lowers the selected cases' own time limits to this, for a defect that
   * hangs a case whose own limit is long. The cases then run through the
   * kit's `runCase`, one by one.
   */
  readonly caseTimeoutOverrideMs?: number;
  /**
   * Why the selected cases run through the kit's `runCase` one by one
   * instead of `runConformance` (which cannot report on this adapter).
   */
  readonly viaRunCase?: string;
  /** The catching case proves only SHOULD requirements: it fails as advisory and the report stays ok. */
  readonly advisory?: boolean;
}

/**
 * The run's case limit for a broken adapter whose selection holds stdin.exactly-once: its 3 000
 * writes cross a testee's link one message each, which beside a second test suite took 37 s, past
 * the case's own 30 s. Where the case fails for its defect, it fails on the content, not the time.
 */
export const EXACTLY_ONCE_THROUGH_TESTEE_MS = 90_000;
