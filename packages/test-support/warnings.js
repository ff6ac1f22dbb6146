// Process warnings a test provokes on purpose (a Process or sandbox it drops
// to see the safety net's warning), captured for the test's assertions
// instead of printed as if something were wrong. Any other warning goes on
// to the listeners it displaced, so Node still prints it.

/**
 * Takes the process's 'warning' listeners over until `release()`: warnings
 * whose code is in `codes` are kept in `warnings`, the rest are passed on.
 */
export function captureWarnings(codes) {
  const expected = new Set(codes);
  const displaced = process.rawListeners('warning');
  const warnings = [];
  const onWarning = (warning) => {
    if (expected.has(warning.code)) warnings.push(warning);
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
