import type { CaseResult } from '@sandstream/types';
import { isBlocking } from '../engine.js';

/**
 * Whether a result makes the run fail, as the report says (`blocking`, spec
 * 1.3). A report of an earlier kit does not say: it is then decided the way
 * the engine decides it, from the result's status and requirements.
 */
export function blocks(c: CaseResult): boolean {
  return c.blocking ?? isBlocking(c, c);
}

/** Why a failure does not fail the run, or undefined when it does (or is no failure). */
export function tolerated(c: CaseResult): 'expected failure' | 'advisory (SHOULD)' | undefined {
  if (c.status !== 'fail' || blocks(c)) return undefined;
  return c.expectedFailure ? 'expected failure' : 'advisory (SHOULD)';
}
