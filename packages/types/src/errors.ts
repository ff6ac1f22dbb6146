import type { Capability } from './schema/capability.js';
import type { ErrorCode } from './schema/error-code.js';
import type { ExecResult } from './schema/exec-result.js';

/**
 * Base class of every error the contract defines. Match on `code`, which is
 * stable within a major spec version; messages are for humans.
 *
 * @example
 * ```ts
 * import { SandstreamError } from '@sandstream/types';
 * try {
 *   // ...
 * } catch (error) {
 *   if (error instanceof SandstreamError && error.code === 'CAPABILITY_NOT_SUPPORTED') {
 *     // fall back to run()
 *   }
 * }
 * ```
 */
export abstract class SandstreamError extends Error {
  abstract readonly code: ErrorCode;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The adapter does not advertise the capability this operation needs. */
export class CapabilityNotSupported extends SandstreamError {
  readonly code = 'CAPABILITY_NOT_SUPPORTED' as const;
  constructor(
    readonly capability: Capability,
    readonly operation: string,
  ) {
    super(`${operation} needs the "${capability}" capability, which this sandbox does not support`);
  }
}

/** An argument or option is malformed; `key` names it (e.g. `argv[2]`, `options.timeout`). */
export class InvalidArgument extends SandstreamError {
  readonly code = 'INVALID_ARGUMENT' as const;
  constructor(
    readonly key: string,
    readonly reason: string,
  ) {
    super(`${key}: ${reason}`);
  }
}

/** The object is not in a state that allows the call (e.g. a Process iterated twice). */
export class InvalidState extends SandstreamError {
  readonly code = 'INVALID_STATE' as const;
}

/**
 * The caller's AbortSignal fired. The command was terminated; `result`
 * holds what it produced until then (with `streamed` as the call implies),
 * or is undefined when the signal had fired before anything was started.
 * `cause` is the signal's reason.
 */
export class AbortError extends SandstreamError {
  readonly code = 'ABORTED' as const;
  constructor(
    readonly result: ExecResult | undefined,
    options?: ErrorOptions,
  ) {
    super('the command was aborted by its AbortSignal', options);
    // The DOM convention, so `error.name === 'AbortError'` checks keep working.
    this.name = 'AbortError';
  }
}

/** The command could not be started at all (no such file, not executable, bad cwd...). */
export class SpawnFailed extends SandstreamError {
  readonly code = 'SPAWN_FAILED' as const;
  constructor(
    readonly argv: readonly string[],
    reason: string,
    options?: ErrorOptions,
  ) {
    super(`could not start ${JSON.stringify(argv[0] ?? '')}: ${reason}`, options);
  }
}

/** Standard input is closed: the writer was ended, or the command exited or stopped reading. */
export class StdinClosed extends SandstreamError {
  readonly code = 'STDIN_CLOSED' as const;
}

/** The caller's `onOutput` callback threw; the command was terminated and `cause` is what it threw. */
export class CallbackFailed extends SandstreamError {
  readonly code = 'CALLBACK_FAILED' as const;
  constructor(
    readonly result: ExecResult | undefined,
    options?: ErrorOptions,
  ) {
    super('the onOutput callback threw; the command was terminated', options);
  }
}

/** What a {@link TransportError} may carry besides the standard `cause`. */
export interface TransportErrorOptions extends ErrorOptions {
  /**
   * The background command whose connection was lost (spec 1.2, ADR-0036): it
   * may still run, owned as before, and `Sandbox.attach(commandId)` finds it.
   */
  readonly commandId?: string;
}

/**
 * The link to the sandbox failed; the command's state may be unknown. For a
 * background command, `commandId` names it so the caller can attach later.
 */
export class TransportError extends SandstreamError {
  readonly code = 'TRANSPORT' as const;
  /** The background command this error is about, when it may still run (spec 1.2). */
  readonly commandId: string | undefined;
  constructor(message: string, options?: TransportErrorOptions) {
    super(message, options);
    this.commandId = options?.commandId;
  }
}

/**
 * No background command of this sandbox has the id (spec 1.2, SS-ATTACH-1):
 * it never existed, was forgotten, or its owner closed. Raised before any
 * side effect.
 *
 * @example
 * ```ts
 * import { CommandNotFound, type Sandbox } from '@sandstream/types';
 * async function isRunning(sb: Sandbox, id: string): Promise<boolean> {
 *   try {
 *     const proc = await sb.attach!(id, { replay: false });
 *     const running = !proc.exited;
 *     await proc.detach();
 *     return running;
 *   } catch (error) {
 *     if (error instanceof CommandNotFound) return false;
 *     throw error;
 *   }
 * }
 * ```
 */
export class CommandNotFound extends SandstreamError {
  readonly code = 'COMMAND_NOT_FOUND' as const;
  constructor(readonly commandId: string) {
    super(`no background command ${JSON.stringify(commandId)} in this sandbox`);
  }
}

/** The sandbox was closed; it accepts no new commands. */
export class SandboxClosed extends SandstreamError {
  readonly code = 'SANDBOX_CLOSED' as const;
  constructor() {
    super('the sandbox is closed');
  }
}
