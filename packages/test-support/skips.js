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
  return (title, ...rest) => {
    const skipped = `${title} (skipped: ${reason})`;
    console.log(`skipped: ${skipped}`);
    return api.skip(skipped, ...rest);
  };
}
