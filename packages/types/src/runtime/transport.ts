import { SandstreamError, TransportError } from '../errors.js';

/** Any thrown value as an Error. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * What a backend failure becomes for the caller: errors the contract
 * defines for that step pass through (`keep`); anything else is a
 * TransportError carrying the original as its cause.
 */
export function asTransport(
  error: unknown,
  step: string,
  keep: ReadonlyArray<abstract new (...args: never[]) => SandstreamError> = [],
): SandstreamError {
  if (error instanceof TransportError || keep.some((kind) => error instanceof kind)) return error as SandstreamError;
  return new TransportError(`${step} failed: ${asError(error).message}`, { cause: error });
}
