// A bounded wait for tests: the test fails, naming what hung, instead of
// running into the test timeout. (The runtime's own bounded wait is
// `within` of @sandstream/types/runtime, which settles with a marker rather
// than failing; this package cannot depend on @sandstream/types, whose tests use it.)

/** Settles like `promise`; rejects with "<what> did not finish within <ms> ms" when it has not settled by then. */
export async function within(ms, promise, what = 'the operation') {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}
