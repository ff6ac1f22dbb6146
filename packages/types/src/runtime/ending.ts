import { AbortError, CallbackFailed } from '../errors.js';
import type { ExecResult } from '../schema/exec-result.js';

/**
 * Why a command ended, when it did not simply end by itself: the runtime
 * ended it (timeout, the caller's signal, a throwing `onOutput`), or its
 * end could not be reported (a failure). The first of these wins, except
 * that a failure replaces any of them: a result that cannot be trusted is
 * not reported.
 */
export type Ending =
  | { readonly kind: 'timed-out' }
  | { readonly kind: 'aborted'; readonly reason: unknown; readonly started: boolean }
  | { readonly kind: 'callback-failed'; readonly error: unknown }
  | { readonly kind: 'failed'; readonly error: Error };

/**
 * The error a command that ended this way reports instead of its result,
 * or undefined when it reports the result (`timed-out` is a result flag).
 * `result` builds the partial result the error carries.
 */
export function endingError(ending: Ending | undefined, result: () => ExecResult): Error | undefined {
  switch (ending?.kind) {
    case 'failed':
      return ending.error;
    case 'aborted':
      return new AbortError(ending.started ? result() : undefined, { cause: ending.reason });
    case 'callback-failed':
      return new CallbackFailed(result(), { cause: ending.error });
    default:
      return undefined;
  }
}
