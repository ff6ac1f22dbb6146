import { InvalidArgument } from '@sandstream/types';
import type { ConformanceCase } from './case.js';

/**
 * A selector matches a case by exact id, by id prefix ending in `*`
 * (`teardown.*`), or by a requirement id it proves (`SS-TEAR-2`).
 */
export function matches(testCase: ConformanceCase, selector: string): boolean {
  if (selector.endsWith('*')) return testCase.id.startsWith(selector.slice(0, -1));
  return testCase.id === selector || testCase.requirements.includes(selector);
}

/** Fails loudly on a selector that matches no case: a typo must not silently select nothing. */
export function checkSelectors(cases: readonly ConformanceCase[], selectors: readonly string[], option: string): void {
  for (const selector of selectors) {
    if (typeof selector !== 'string' || selector === '') {
      throw new InvalidArgument(option, 'selectors must be non-empty strings');
    }
    if (!cases.some((c) => matches(c, selector))) {
      throw new InvalidArgument(option, `${JSON.stringify(selector)} matches no case (see --list)`);
    }
  }
}
