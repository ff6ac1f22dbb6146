// Process warnings a test provokes on purpose (a Process or sandbox it drops
// to see the safety net's warning), captured for the test's assertions
// instead of printed as if something were wrong. Any other warning goes on
// to the listeners it displaced, so Node still prints it.

/** What {@link captureWarnings} returns. */
export interface CapturedWarnings {
  /** The captured warnings, in the order they were emitted. */
  readonly warnings: Array<Error & { code?: string }>;
  /** Gives the displaced listeners back; later warnings are no longer captured. */
  release(): void;
}

/**
 * Takes the process's `'warning'` listeners over until `release()`: warnings
 * whose code is in `codes` (those the test provokes on purpose) are kept for
 * its assertions instead of printed; any other is passed on to the displaced
 * listeners, so Node still prints it.
 *
 * @example const leaks = captureWarnings(['SANDSTREAM_PROCESS_LEAKED']); try { ... expect(leaks.warnings).toHaveLength(1) } finally { leaks.release() }
 */
export function captureWarnings(codes: readonly string[]): CapturedWarnings {
  const expected = new Set(codes);
  const displaced = process.rawListeners('warning') as Array<(warning: Error) => void>;
  const warnings: Array<Error & { code?: string }> = [];
  const onWarning = (warning: Error & { code?: string }): void => {
    if (warning.code !== undefined && expected.has(warning.code)) warnings.push(warning);
    else for (const listener of displaced) listener(warning);
  };
  process.removeAllListeners('warning');
  process.on('warning', onWarning);
  let released = false;
  return {
    warnings,
    release() {
      if (released) return;
      released = true;
      process.off('warning', onWarning);
      for (const listener of displaced) process.on('warning', listener);
    },
  };
}
