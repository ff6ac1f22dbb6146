// A bounded wait for tests: the test fails, naming what hung, instead of
// running into the test timeout. (The runtime's own bounded wait is
// `within` of @sandstream/types/runtime, which settles with a marker rather
// than failing: a test wants the failure.)

/** Settles like `promise`; rejects with "<what> did not finish within <ms> ms" when it has not settled by then. */
export async function within<T>(ms: number, promise: Promise<T>, what = 'the operation'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves once `condition()` holds, looking again at waits that grow from 2 ms to 50 ms; rejects
 * naming `what` after `ms`. `what` may be a function, asked only then, so the error can say what
 * the last look found (the processes still alive, say).
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, ms: number, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + ms;
  let delay = 2;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`${typeof what === 'function' ? what() : what}: still not true after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 50);
  }
}
