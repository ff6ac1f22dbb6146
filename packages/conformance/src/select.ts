import { InvalidArgument } from '@sandstream/types';
import type { ConformanceCase } from './case.js';

/** Which cases a run covers: the one rule the engine, the CLI and the Vitest entry share. */
export interface Selection {
  /** Run only cases matching one of these; empty or absent: every case. */
  readonly include?: readonly string[] | undefined;
  /** Report cases matching one of these as `disabled`. */
  readonly exclude?: readonly string[] | undefined;
}

/**
 * A selector matches a case by exact id, by id prefix ending in `*`
 * (`teardown.*`), or by a requirement id it proves (`SS-TEAR-2`).
 */
export function matches(testCase: ConformanceCase, selector: string): boolean {
  if (selector.endsWith('*')) return testCase.id.startsWith(selector.slice(0, -1));
  return testCase.id === selector || testCase.requirements.includes(selector);
}

/** Why the selection leaves `testCase` out (its `disabled` message), or undefined when it runs. */
export function deselected(testCase: ConformanceCase, selection: Selection): string | undefined {
  if ((selection.exclude ?? []).some((s) => matches(testCase, s))) return 'excluded by the user';
  const include = selection.include ?? [];
  if (include.length > 0 && !include.some((s) => matches(testCase, s))) return 'not selected by include';
  return undefined;
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
