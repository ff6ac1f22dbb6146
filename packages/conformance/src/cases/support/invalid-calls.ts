/**
 * Calls that break the contract's types on purpose, and the check that each
 * is refused with InvalidArgument naming what is wrong (spec 3.1, 3.2).
 */
import { check, checkErrorCode } from '../../assert.js';

/** A call to refuse, and the key its InvalidArgument must name. */
export interface BadCall {
  readonly argv: unknown;
  readonly options?: unknown;
  readonly key: string;
}

/** Fails unless `error` is InvalidArgument naming `key`. */
export function checkInvalid(error: unknown, key: string, what: string): void {
  checkErrorCode(error, 'INVALID_ARGUMENT', what);
  const named = (error as { key?: unknown }).key;
  check(named === key, `${what}: InvalidArgument names ${JSON.stringify(named)}, expected ${JSON.stringify(key)}`);
}

/** The call as a failure message shows it: `(["echo",1])`, NaN spelled out. */
export function label(call: BadCall): string {
  const show = (value: unknown): string => JSON.stringify(value, (_, v: unknown) => (typeof v === 'number' && Number.isNaN(v) ? 'NaN' : v));
  return `(${show(call.argv)}${call.options === undefined ? '' : `, ${show(call.options)}`})`;
}

// The contract is typed; these calls deliberately break the types.
export type LooseRun = (argv: unknown, options?: unknown) => Promise<unknown>;
export type LooseStream = (argv: unknown, options?: unknown) => unknown;
