// Tests that can run only where the machine allows (root, prlimit, PID
// namespaces, ...) and say why wherever they are skipped.

/**
 * Vitest's `it`, `test` or `describe` when `reason` is undefined. Otherwise
 * its `skip`, registering every title as `<title> (skipped: <reason>)` and
 * printing that line, so the reason shows in the reporters that list skipped
 * tests and in those that only count them.
 */
export function unless(api, reason) {
  if (reason === undefined) return api;
  const skip = (title, ...rest) => {
    const skipped = `${title} (skipped: ${reason})`;
    console.log(`skipped: ${skipped}`);
    return api.skip(skipped, ...rest);
  };
  // A table of tests (`it_.each(rows)(title, fn)`) is skipped the same way, each title with the reason.
  skip.each = (rows) => (title, ...rest) => {
    const skipped = `${title} (skipped: ${reason})`;
    console.log(`skipped: ${skipped}`);
    return api.skip.each(rows)(skipped, ...rest);
  };
  return skip;
}
