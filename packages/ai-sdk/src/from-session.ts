// Any AI SDK SandboxSession as a Sandstream Sandbox, so the conformance kit can check it.
import type { CapabilityManifest, Sandbox } from '@sandstream/types';
import { defineSandbox } from '@sandstream/types/runtime';
import type { SessionCommands } from './session-commands.js';
import { SessionDriver } from './session-driver.js';

/** Options of {@link fromSandboxSession}. */
export interface FromSandboxSessionOptions {
  /** The sandbox's name, as reports print it (default `ai-sdk-session`). */
  readonly name?: string;
  /**
   * Whether the session's `spawn` takes `stdin: true` (default true). The
   * interface says an implementation without writable stdin rejects, but
   * not how to ask beforehand, so the manifest states what the caller knows.
   */
  readonly stdin?: boolean;
  /**
   * Before each spawn, run `command -v argv[0]` in the requested directory,
   * so that a missing binary or directory is `SpawnFailed` as the spec
   * says, not a shell's exit 127 (default true). Costs one `run` per command.
   */
  readonly checkSpawn?: boolean;
  /** Milliseconds between SIGTERM and SIGKILL (default 2000); both are one `kill()` here. */
  readonly graceMs?: number;
  /** Milliseconds to wait for the exit after SIGKILL (default 5000). */
  readonly killWaitMs?: number;
  /** Called by `close()` after every command ended: the session's own teardown, if it has one. */
  readonly close?: () => Promise<void>;
}

/**
 * Any AI SDK sandbox session (`@ai-sdk/provider-utils`'s `SandboxSession`,
 * as the `@ai-sdk/sandbox-*` providers create) as a Sandstream
 * {@link Sandbox}, on the shared runtime: timeouts, abort, the output cap,
 * backpressure and close-terminates-everything are Sandstream's.
 *
 * What the interface cannot carry is not invented:
 * - argv becomes one shell line (each word quoted) for `spawn({ command })`;
 * - the only signal is `kill()`: SIGTERM and SIGKILL both call it, SIGCONT is
 *   a no-op, other signals are refused with `InvalidArgument`;
 * - `wait()` gives an exit code only; after a kill, a `128 + n` status is
 *   reported as death by signal n, otherwise the code stands;
 * - no resource limits, no user.
 *
 * @example
 * ```ts
 * import { createJustBashSandbox } from '@ai-sdk/sandbox-just-bash';
 * import { fromSandboxSession } from '@sandstream/ai-sdk';
 * const session = (await createJustBashSandbox().createSession()).restricted();
 * const sandbox = fromSandboxSession(session, { name: 'just-bash' });
 * const result = await sandbox.run(['echo', 'hi']);
 * ```
 */
export function fromSandboxSession<Session extends SessionCommands>(session: Session, options: FromSandboxSessionOptions = {}): Sandbox<Session> {
  const capabilities: CapabilityManifest = {
    streaming: true,
    stdin: options.stdin ?? true,
    'resource-limits': false,
    user: false,
  };
  const settings = { checkSpawn: options.checkSpawn ?? true };
  return defineSandbox({
    name: options.name ?? 'ai-sdk-session',
    capabilities,
    native: session,
    ...(options.graceMs !== undefined && { graceMs: options.graceMs }),
    ...(options.killWaitMs !== undefined && { killWaitMs: options.killWaitMs }),
    createDriver: (command) => new SessionDriver(session, command, settings),
    ...(options.close !== undefined && { close: options.close }),
  });
}
