import { isDeepStrictEqual, inspect } from 'node:util';
import type { ErrorCode } from '@sandstream/types';

/** A check of the adapter's behaviour failed: the case's status is `fail`. */
export class ConformanceFailure extends Error {
  override readonly name = 'ConformanceFailure';
}

/**
 * The sandbox cannot host the case (e.g. no POSIX shell): the harness could
 * not check anything, so the status is `error`, not `fail`.
 */
export class HarnessError extends Error {
  override readonly name = 'HarnessError';
}

function show(value: unknown): string {
  if (value instanceof Uint8Array) {
    const text = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    return value.byteLength <= 64 ? `bytes[${value.byteLength}] ${inspect(text.toString('latin1'))}` : `bytes[${value.byteLength}]`;
  }
  return inspect(value, { depth: 4, breakLength: Infinity, maxStringLength: 200 });
}

/** Fails the case unless `condition` holds. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ConformanceFailure(message);
}

/** Fails unless the values are deeply equal (bytes compared by content). */
export function checkEqual<T>(actual: unknown, expected: T, what: string): asserts actual is T {
  if (actual instanceof Uint8Array && expected instanceof Uint8Array) {
    if (Buffer.compare(actual, expected) === 0) return;
    const at = firstDifference(actual, expected);
    throw new ConformanceFailure(
      `${what}: bytes differ at offset ${at} (got ${show(actual)}, expected ${show(expected)})`,
    );
  }
  if (!isDeepStrictEqual(actual, expected)) {
    throw new ConformanceFailure(`${what}: got ${show(actual)}, expected ${show(expected)}`);
  }
}

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.byteLength, b.byteLength);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}

/** The `code` of an error, if it has one. */
export function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

/** Fails unless `error` is a Sandstream error with the given code. */
export function checkErrorCode(error: unknown, code: ErrorCode, what: string): void {
  if (codeOf(error) !== code) {
    throw new ConformanceFailure(`${what}: expected an error with code ${code}, got ${describeError(error)}`);
  }
}

/**
 * The parts of a `SuppressedError` (thrown when disposal fails while an
 * error is already propagating, as `await using` does): `error` is the
 * disposal's, `suppressed` the one it displaced. Recognised by shape, since
 * Node 20 has no global `SuppressedError` and TypeScript's helper makes its own.
 */
export function suppressedParts(error: unknown): { error: unknown; suppressed: unknown } | undefined {
  if (!(error instanceof Error) || error.name !== 'SuppressedError') return undefined;
  if (!('error' in error) || !('suppressed' in error)) return undefined;
  return { error: (error as { error: unknown }).error, suppressed: (error as { suppressed: unknown }).suppressed };
}

/** Every error a (possibly nested) `SuppressedError` carries, the displaced ones first. */
export function flattenSuppressed(error: unknown): unknown[] {
  const parts = suppressedParts(error);
  return parts === undefined ? [error] : [...flattenSuppressed(parts.suppressed), ...flattenSuppressed(parts.error)];
}

/** A one-line description of whatever was thrown; a `SuppressedError` shows both of its errors. */
export function describeError(error: unknown): string {
  if (error === undefined) return 'no error';
  const parts = suppressedParts(error);
  if (parts !== undefined) {
    return `${describeError(parts.suppressed)}; then, while disposing, ${describeError(parts.error)}`;
  }
  if (error instanceof Error) {
    const code = codeOf(error);
    return `${error.name}${code === undefined ? '' : ` [${String(code)}]`}: ${error.message}`;
  }
  return `a thrown ${typeof error} ${show(error)}`;
}

/** Runs `fn`, which must throw synchronously; returns what it threw. */
export function thrownBy(fn: () => unknown, what: string): unknown {
  let result: unknown;
  try {
    result = fn();
  } catch (error) {
    return error;
  }
  if (result instanceof Promise) result.catch(() => undefined);
  throw new ConformanceFailure(`${what}: expected a synchronous throw, but it returned ${show(result)}`);
}

/** Awaits `promise`, which must reject; returns the rejection. */
export async function rejectionOf(promise: Promise<unknown>, what: string): Promise<unknown> {
  try {
    const value = await promise;
    throw new ConformanceFailure(`${what}: expected a rejection, but it resolved with ${show(value)}`);
  } catch (error) {
    if (error instanceof ConformanceFailure) throw error;
    return error;
  }
}
