/**
 * One call from a transport to a Sandbox: what every exec-style adapter
 * wrote for itself before (ADR-0033) — the option vocabulary and its
 * checks, the `RemoteCommands` wiring with one retry policy for the kills
 * and sweeps after a broken link, the default account, background commands,
 * the owner lease's stated bound, and the close-time sweep.
 */
import type { CapabilityManifest, Sandbox } from '@sandstream/types';
import { capabilitiesOption, defineSandbox, DEFAULT_GRACE_MS, DEFAULT_KILL_WAIT_MS, nonNegativeOption, type CommandSpec } from '@sandstream/types/runtime';
import { recordBaseOption } from './background.js';
import { RemoteCommands } from './commands.js';
import { DEFAULT_PATHS } from './launch.js';
import { DEFAULT_RETRY } from './retry.js';
import type { RemoteTransport } from './transport.js';

/** The options every exec-style adapter takes, with the same meaning (an adapter may leave some out). */
export interface RemoteSandboxOptions {
  /** Variables added to every command's environment (a command's own `env` wins). */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory of commands that pass no `cwd` (default: the backend's). */
  readonly cwd?: string;
  /** The account commands that name none run as (default: the backend's). */
  readonly user?: string;
  /** Time between SIGTERM and SIGKILL in teardown, in ms (default 2000). */
  readonly graceMs?: number;
  /** Wait for the tree to be gone after SIGKILL before reporting `TransportError`, in ms (default 5000). */
  readonly killWaitMs?: number;
  /** Bound on signal deliveries and other helper round trips, in ms (default 15000). */
  readonly requestTimeoutMs?: number;
  /** Path of a POSIX shell inside the sandbox, which runs the supervisor and its helpers (default `/bin/sh`). */
  readonly shellPath?: string;
  /** Path of `env(1)` inside the sandbox, which sets the command's variables exactly (default `/usr/bin/env`). */
  readonly envPath?: string;
  /** util-linux's `prlimit` inside the sandbox, for resource limits (default `/usr/bin/prlimit`). */
  readonly prlimitPath?: string;
  /**
   * util-linux's `script` inside the sandbox, which holds the terminal of a background command
   * with `pty` (spec 1.5; default `/usr/bin/script`).
   */
  readonly scriptPath?: string;
  /** Turns capabilities off (never on), e.g. `user` where the backend cannot switch accounts. */
  readonly capabilities?: Partial<CapabilityManifest>;
  /**
   * Where background commands' records are made in the sandbox, `${recordBase}${commandId}`
   * (default `/tmp/.sandstream-`). Every handle on one sandbox must use the same.
   */
  readonly recordBase?: string;
}

/** The names of {@link RemoteSandboxOptions}, for an adapter's own check of its option keys. */
export const REMOTE_OPTION_KEYS: readonly (keyof RemoteSandboxOptions)[] = Object.freeze([
  'env',
  'cwd',
  'user',
  'graceMs',
  'killWaitMs',
  'requestTimeoutMs',
  'shellPath',
  'envPath',
  'prlimitPath',
  'scriptPath',
  'capabilities',
  'recordBase',
]);

/** The options' values, checked and with their defaults. */
interface ResolvedOptions {
  readonly graceMs: number;
  readonly killWaitMs: number;
  readonly requestTimeoutMs: number;
  readonly recordBase: string;
}

function resolve(options: RemoteSandboxOptions): ResolvedOptions {
  return {
    graceMs: nonNegativeOption('graceMs', options.graceMs, DEFAULT_GRACE_MS),
    killWaitMs: nonNegativeOption('killWaitMs', options.killWaitMs, DEFAULT_KILL_WAIT_MS),
    requestTimeoutMs: nonNegativeOption('requestTimeoutMs', options.requestTimeoutMs, 15_000),
    recordBase: recordBaseOption(options.recordBase),
  };
}

/**
 * Checks the values of the remote kit's options against `available` (the
 * backend's capabilities), throwing `InvalidArgument` naming the first bad
 * one. An adapter calls it before its first request, so that a malformed
 * option never leaves a sandbox it created behind; {@link defineRemoteSandbox}
 * checks them again.
 *
 * @example
 * ```ts
 * import { checkRemoteOptions } from '@sandstream/remote';
 * checkRemoteOptions({ graceMs: 500 }, { streaming: true, stdin: true, 'resource-limits': false, user: false });
 * ```
 */
export function checkRemoteOptions(options: RemoteSandboxOptions, available: CapabilityManifest): void {
  resolve(options);
  capabilitiesOption(options.capabilities, available);
}

/** What the transport is built with: the settings it shares with the driver. */
export interface RemoteTransportSettings {
  readonly requestTimeoutMs: number;
  /** The shell inside the sandbox (`shellPath`). */
  readonly shell: string;
}

/** An exec-style adapter, as {@link defineRemoteSandbox} takes it. */
export interface RemoteSandboxDefinition<Native> {
  /** `Sandbox.name`. */
  readonly name: string;
  /** What the backend can do; the `capabilities` option turns some of it off. */
  readonly capabilities: CapabilityManifest;
  /** `Sandbox.native`: the backend's own handle. */
  readonly native: Native;
  /** The caller's options (their keys checked by the adapter, which may take more). */
  readonly options: RemoteSandboxOptions;
  /** Builds the transport. */
  transport(settings: RemoteTransportSettings): RemoteTransport;
  /** Says what a transport's error was, for messages (default: its message). */
  readonly describe?: (error: unknown) => string;
  /**
   * How long the kills and sweeps after a broken link keep trying, in ms (default
   * `requestTimeoutMs`): longer for a service whose outages outlast one request's bound.
   */
  readonly retryDeadlineMs?: number;
  /** Helpers through one long-lived exec per account (for a backend whose exec costs several requests). */
  readonly helperChannel?: boolean;
  /** What `close()` ends after the sweep of this handle's commands: a sandbox the adapter owns. */
  release?(): Promise<void>;
}

/**
 * Builds the Sandbox of an exec-style adapter from its transport: the
 * supervisor, the owner lease and its stated `ownerLossMs`, background
 * commands, and `close()` (a sweep of every process this handle's commands
 * left, bounded inside the kill wait, then `release`).
 *
 * The kills and sweeps that follow a broken link share one retry policy: up
 * to 50 attempts within `requestTimeoutMs` (or `retryDeadlineMs`), since the
 * link that just failed may fail once more. An outage longer than that is
 * the owner lease's: the supervisor ends the tree once renewals stop
 * arriving.
 *
 * @throws InvalidArgument when a numeric option or `capabilities` is malformed.
 *
 * @example
 * ```ts
 * import { defineRemoteSandbox, type RemoteTransport } from '@sandstream/remote';
 * declare const transport: RemoteTransport;
 * const sandbox = defineRemoteSandbox({
 *   name: 'my-backend',
 *   capabilities: { streaming: true, stdin: true, 'resource-limits': true, user: false },
 *   native: undefined,
 *   options: { graceMs: 1_000 },
 *   transport: () => transport,
 * });
 * console.log(sandbox.termination?.ownerLossMs);
 * ```
 */
export function defineRemoteSandbox<Native>(definition: RemoteSandboxDefinition<Native>): Sandbox<Native> {
  const { options } = definition;
  const { graceMs, killWaitMs, requestTimeoutMs, recordBase } = resolve(options);
  const capabilities = capabilitiesOption(options.capabilities, definition.capabilities);
  const shell = options.shellPath ?? DEFAULT_PATHS.shell;
  const commands = new RemoteCommands(
    {
      transport: definition.transport({ requestTimeoutMs, shell }),
      env: { ...options.env },
      cwd: options.cwd,
      paths: { shell, env: options.envPath ?? DEFAULT_PATHS.env, prlimit: options.prlimitPath ?? DEFAULT_PATHS.prlimit, script: options.scriptPath ?? DEFAULT_PATHS.script },
      requestTimeoutMs,
      retry: { ...DEFAULT_RETRY, attempts: 50, deadlineMs: definition.retryDeadlineMs ?? requestTimeoutMs },
      ...(definition.describe === undefined ? {} : { describe: definition.describe }),
      ...(definition.helperChannel === undefined ? {} : { helperChannel: definition.helperChannel }),
      recordBase,
    },
    { graceMs },
  );
  const user = options.user;
  const withUser = (command: CommandSpec): CommandSpec => (user === undefined || command.user !== undefined ? command : { ...command, user });
  const background = commands.background;
  return defineSandbox<Native>({
    name: definition.name,
    capabilities,
    native: definition.native,
    graceMs,
    killWaitMs,
    // Spec 1.4: the owner lease ends a foreground command's tree within this bound once its owner is lost.
    ownerLossMs: commands.ownerLossMs,
    createDriver: (command) => commands.createDriver(withUser(command)),
    background: {
      start: (command) => background.start(withUser(command)),
      follow: (id, replay) => background.follow(id, replay),
      list: () => background.list(),
      forget: (id) => background.forget(id),
    },
    async close() {
      // Every command this handle started has been disposed (its tree is gone); what left its
      // session is found by the tag. A second chance, not a step teardown depends on: bounded well
      // inside the kill wait. What the adapter owns goes after.
      await commands.sweep(Math.min(killWaitMs, 5_000)).catch(() => undefined);
      await definition.release?.();
    },
  });
}
