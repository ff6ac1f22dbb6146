// Tests that can run only where the machine allows (root, prlimit, PID
// namespaces, ...) and say why wherever they are skipped.

/** What {@link unless} needs of Vitest's `it`, `test` or `describe`. */
interface Skippable {
  skip: (title: string, ...rest: never[]) => unknown;
}

/**
 * Vitest's `it`, `test` or `describe` when `reason` is undefined. Otherwise
 * its `skip`, registering every title as `<title> (skipped: <reason>)` and
 * printing that line, so the reason shows in the reporters that list skipped
 * tests and in those that only count them.
 *
 * @example unless(it, root ? undefined : 'not root, so no account can be switched')("runs as 'nobody'", async () => {...})
 */
export function unless<Api extends Skippable>(api: Api, reason: string | undefined): Api['skip'] {
  if (reason === undefined) return api as unknown as Api['skip'];
  const original = api.skip as unknown as ((title: string, ...rest: unknown[]) => unknown) & {
    each: (rows: unknown) => (title: string, ...rest: unknown[]) => unknown;
  };
  const skip = (title: string, ...rest: unknown[]): unknown => {
    const skipped = `${title} (skipped: ${reason})`;
    console.log(`skipped: ${skipped}`);
    return original(skipped, ...rest);
  };
  // A table of tests (`it_.each(rows)(title, fn)`) is skipped the same way, each title with the reason.
  skip.each =
    (rows: unknown) =>
    (title: string, ...rest: unknown[]): unknown => {
      const skipped = `${title} (skipped: ${reason})`;
      console.log(`skipped: ${skipped}`);
      return original.each(rows)(skipped, ...rest);
    };
  return skip as unknown as Api['skip'];
}
