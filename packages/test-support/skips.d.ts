/**
 * Vitest's `it`, `test` or `describe` when `reason` is undefined. Otherwise
 * its `skip`, registering every title as `<title> (skipped: <reason>)` and
 * printing that line, so the reason shows in the reporters that list skipped
 * tests and in those that only count them.
 *
 * @example unless(it, root ? undefined : 'not root, so no account can be switched')("runs as 'nobody'", async () => {...})
 */
export declare function unless<Api extends { skip: (title: string, ...rest: never[]) => unknown }>(
  api: Api,
  reason: string | undefined,
): Api['skip'];
