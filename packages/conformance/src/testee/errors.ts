/**
 * Errors across the testee protocol (spec 1.3, section 18.4): the spec's
 * `ErrorCode` and the fields its classes carry, so the kit rebuilds the same
 * classes and every case's `checkErrorCode` works as on a direct run. An
 * error that is not the contract's has no `code`, and no case accepts it.
 */
import {
  AbortError,
  CallbackFailed,
  CapabilityNotSupported,
  CommandNotFound,
  InvalidArgument,
  InvalidState,
  SandboxClosed,
  SpawnFailed,
  StdinClosed,
  TransportError,
  type Capability,
  type ExecResult,
  type WireError,
} from '@sandstream/types';
import { decodeValue, encodeValue } from './values.js';

/** An error as it travels: the spec's `WireError` (`spec/1.3/testee.json`). */
export type { WireError };

/** The property a testee's stand-in callback sets on what it throws. */
export const CALLBACK_ID = 'sandstreamCallback';

/** Writes what was thrown as a {@link WireError}. */
export function encodeError(error: unknown, depth = 0): WireError {
  if (!(error instanceof Error)) return { name: 'NonError', message: String(typeof error === 'symbol' ? error.toString() : error), thrown: encodeValue(error) };
  const fields = error as Error & Record<string, unknown>;
  const out: Record<string, unknown> = { name: error.name, message: error.message };
  if (typeof error.stack === 'string') out['stack'] = error.stack;
  for (const key of ['code', 'key', 'reason', 'capability', 'operation', 'commandId'] as const) {
    if (typeof fields[key] === 'string') out[key] = fields[key];
  }
  if (Array.isArray(fields['argv'])) out['argv'] = encodeValue(fields['argv']);
  if ('result' in fields && fields['result'] !== undefined) out['result'] = encodeValue(fields['result']);
  if (typeof fields[CALLBACK_ID] === 'string') out['callback'] = fields[CALLBACK_ID];
  if (depth < 4) {
    if (error.cause !== undefined) out['cause'] = encodeError(error.cause, depth + 1);
    if (error.name === 'SuppressedError' && 'error' in fields && 'suppressed' in fields) {
      out['error'] = encodeError(fields['error'], depth + 1);
      out['suppressed'] = encodeError(fields['suppressed'], depth + 1);
    }
  }
  return out as unknown as WireError;
}

/** Looks up what the kit's own callback threw, by the callback's id. */
export type ThrownByCallback = (id: string) => unknown;

/** Rebuilds the class the adapter threw from a {@link WireError}, with its message as sent. */
export function decodeError(wire: WireError, thrownBy: ThrownByCallback = () => undefined): unknown {
  if (wire.thrown !== undefined) return decodeValue(wire.thrown);
  const cause = wire.cause === undefined ? undefined : wire.cause.callback !== undefined ? thrownBy(wire.cause.callback) : decodeError(wire.cause, thrownBy);
  const options = wire.cause === undefined ? undefined : { cause };
  const result = wire.result === undefined ? undefined : rebuildResult(decodeValue(wire.result));
  let error: Error;
  switch (wire.code) {
    case 'CAPABILITY_NOT_SUPPORTED':
      error = new CapabilityNotSupported((wire.capability ?? '') as Capability, wire.operation ?? '');
      break;
    case 'INVALID_ARGUMENT':
      error = new InvalidArgument(wire.key ?? '', wire.reason ?? '');
      break;
    case 'INVALID_STATE':
      error = new InvalidState(wire.message, options);
      break;
    case 'ABORTED':
      error = new AbortError(result, options);
      break;
    case 'SPAWN_FAILED':
      error = new SpawnFailed((decodeValue(wire.argv ?? []) as string[]) ?? [], '', options);
      break;
    case 'STDIN_CLOSED':
      error = new StdinClosed(wire.message, options);
      break;
    case 'CALLBACK_FAILED':
      error = new CallbackFailed(result, options);
      break;
    case 'TRANSPORT':
      error = new TransportError(wire.message, { ...options, ...(wire.commandId === undefined ? {} : { commandId: wire.commandId }) });
      break;
    case 'SANDBOX_CLOSED':
      error = new SandboxClosed();
      break;
    case 'COMMAND_NOT_FOUND':
      error = new CommandNotFound(wire.commandId ?? '');
      break;
    default: {
      error = new Error(wire.message, options);
      // What the adapter threw keeps its name and its code (an unknown one is no case's).
      if (wire.code !== undefined) Object.defineProperty(error, 'code', { value: wire.code, enumerable: true });
      if (wire.name === 'SuppressedError' && wire.error !== undefined && wire.suppressed !== undefined) {
        Object.assign(error, { error: decodeError(wire.error, thrownBy), suppressed: decodeError(wire.suppressed, thrownBy) });
      }
    }
  }
  Object.defineProperty(error, 'message', { value: wire.message, writable: true, configurable: true });
  Object.defineProperty(error, 'name', { value: wire.name, writable: true, configurable: true });
  if (typeof wire.stack === 'string') Object.defineProperty(error, 'stack', { value: wire.stack, writable: true, configurable: true });
  if (wire.cause !== undefined && error.cause === undefined) Object.defineProperty(error, 'cause', { value: cause, writable: true, configurable: true });
  return error;
}

const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * A result as the adapter returned it: its data fields as sent (an invalid
 * one stays invalid, for the case to judge), with the lazily decoded text
 * views a result of `createExecResult` has, and frozen as it is.
 */
export function rebuildResult(value: unknown): ExecResult {
  if (typeof value !== 'object' || value === null) return value as ExecResult;
  const data = value as Record<string, unknown>;
  for (const name of ['stdout', 'stderr'] as const) {
    const bytes = data[name];
    if (bytes instanceof Uint8Array && !(`${name}Text` in data)) {
      let cached: string | undefined;
      Object.defineProperty(data, `${name}Text`, { enumerable: false, get: () => (cached ??= decoder.decode(bytes)) });
    }
  }
  return Object.freeze(data) as unknown as ExecResult;
}
