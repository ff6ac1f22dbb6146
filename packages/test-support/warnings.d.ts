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
export declare function captureWarnings(codes: readonly string[]): CapturedWarnings;
