/**
 * The remote driver's face for an adapter: one {@link RemoteCommands} per
 * sandbox handle makes a {@link RemoteDriver} per command and, at close,
 * sweeps by tag what escaped the supervisors (ADR-0033). A command whose
 * fate its driver could not settle is swept again in the background until
 * then (`late-sweeps.ts`).
 */
import { randomUUID } from 'node:crypto';
import { DEFAULT_GRACE_MS } from '@sandstream/types/runtime';
import type { CommandSpec } from '@sandstream/types/runtime';
import { RemoteBackground } from './background-commands.js';
import { RemoteDriver, type RemoteDriverSettings } from './driver.js';
import { ChannelledTransport } from './helper-channel.js';
import { sweepArgv } from './helpers.js';
import { LateSweeps, lateSweepWindowMs } from './late-sweeps.js';
import { DEFAULT_RECORD_BASE, recordsArgv } from './background.js';
import { OwnerLease, ownerLeaseTimes, ownerLossMs, type OwnerLeaseTimes } from './owner-lease.js';

/** What {@link RemoteCommands} takes besides the drivers' settings. */
export interface RemoteCommandsOptions {
  /**
   * Spec 1.4: the sandbox's grace period (default 2000 ms), which a supervisor whose owner is
   * lost waits between SIGTERM and SIGKILL, as the runtime would.
   */
  readonly graceMs?: number | undefined;
  /**
   * The owner lease's times (default {@link DEFAULT_OWNER_LEASE}); `false`: none, for a backend
   * that itself ends a command whose client is gone.
   */
  readonly ownerLease?: Partial<OwnerLeaseTimes> | false | undefined;
}

/**
 * Makes the drivers of one sandbox handle. Every command's id starts with
 * this handle's prefix, so `sweep()` reaches exactly the commands this
 * handle started, in a sandbox other handles may share.
 *
 * @example
 * ```ts
 * import { defineSandbox } from '@sandstream/types/runtime';
 * import { DEFAULT_PATHS, DEFAULT_RETRY, RemoteCommands, type RemoteTransport } from '@sandstream/remote';
 *
 * declare const transport: RemoteTransport;
 * const commands = new RemoteCommands({
 *   transport, env: {}, cwd: undefined, paths: DEFAULT_PATHS, requestTimeoutMs: 15_000, retry: DEFAULT_RETRY,
 * });
 * const sandbox = defineSandbox({
 *   name: 'my-backend',
 *   capabilities: { streaming: true, stdin: true, 'resource-limits': true, user: false },
 *   native: undefined,
 *   createDriver: (command) => commands.createDriver(command),
 *   close: () => commands.sweep(),
 * });
 * ```
 */
export class RemoteCommands {
  readonly #settings: RemoteDriverSettings;
  /** A short random prefix of this handle's command ids. */
  readonly prefix = randomUUID().slice(0, 8);
  /** The accounts commands ran as (undefined: the backend's default): a sweep runs as each. */
  readonly #users = new Set<string | undefined>();
  /** The accounts that ran commands on a terminal (spec 1.5), whose records a close removes. */
  readonly #terminalUsers = new Set<string | undefined>();
  /** The helpers' channels, when the settings ask for them. */
  readonly #channels: ChannelledTransport | undefined;
  readonly #late: LateSweeps;
  /**
   * Spec 1.2's background commands over this handle's transport, for
   * `defineSandbox`'s `background` (ADR-0036): records in the sandbox that
   * other handles list and attach to.
   */
  readonly background: RemoteBackground;

  /** The owner lease of this handle's foreground commands; undefined with `ownerLease: false`. */
  readonly #lease: OwnerLease | undefined;
  /** What every handle's lease file in this sandbox starts with, for the removal of lapsed ones at close. */
  readonly #leasePrefix: string | undefined;
  /**
   * Spec 1.4: within how many ms of the owner's loss a foreground command's tree is gone (the
   * sandbox's `termination.ownerLossMs`); undefined without an owner lease.
   */
  readonly ownerLossMs: number | undefined;

  constructor(settings: RemoteDriverSettings, options: RemoteCommandsOptions = {}) {
    this.#channels = settings.helperChannel === true ? new ChannelledTransport(settings.transport, settings.paths.shell, this.prefix) : undefined;
    const transport = this.#channels ?? settings.transport;
    const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    if (options.ownerLease !== false) {
      const times = ownerLeaseTimes(options.ownerLease);
      this.#leasePrefix = `${settings.recordBase ?? DEFAULT_RECORD_BASE}owner-`;
      this.#lease = new OwnerLease({
        transport,
        shell: settings.paths.shell,
        base: `${this.#leasePrefix}${this.prefix}-`,
        lapsedPrefix: this.#leasePrefix,
        times,
        graceMs,
        requestTimeoutMs: settings.requestTimeoutMs,
      });
      this.ownerLossMs = ownerLossMs(times, graceMs);
    }
    this.#settings = { ...settings, transport, lease: this.#lease, graceMs };
    this.#late = new LateSweeps({
      transport: this.#settings.transport,
      shell: settings.paths.shell,
      requestTimeoutMs: settings.requestTimeoutMs,
      windowMs: settings.lateSweepMs ?? lateSweepWindowMs(settings.requestTimeoutMs),
    });
    this.background = new RemoteBackground(this.#settings, { prefix: this.prefix, users: this.#users }, settings.recordBase);
  }

  /** A driver for one command; its id is this handle's prefix and a UUID. */
  createDriver(command: CommandSpec): RemoteDriver {
    this.#users.add(command.user);
    if (command.pty !== undefined) this.#terminalUsers.add(command.user);
    return new RemoteDriver(command, this.#settings, `${this.prefix}-${randomUUID()}`, (id) => this.#late.track(id, command.user));
  }

  /** How many commands whose fate is unknown are being swept in the background now. */
  get lateSweeps(): number {
    return this.#late.pending;
  }

  /**
   * SIGKILL to every process still tagged by a command of this handle: the
   * close-time sweep, one helper per account that ran commands, and the
   * removal of the background records it started: all of it within one
   * bound, `timeoutMs` (default `requestTimeoutMs`; an adapter passes its
   * kill wait, which bounds every other step of `close()`), shared by the
   * requests rather than given to each, so an overloaded backend cannot
   * stretch `close()` by a bound per account. Nothing when no command ran.
   * Rejects with the first failure, or when the bound runs out. The
   * background sweeps end first (this one supersedes them), and the
   * helpers' channels, if any, end with it.
   */
  async sweep(timeoutMs: number = this.#settings.requestTimeoutMs): Promise<void> {
    const { transport, paths } = this.#settings;
    this.#lease?.stop();
    const deadline = performance.now() + timeoutMs;
    const left = (): number => {
      const ms = Math.floor(deadline - performance.now());
      if (ms <= 0) throw new Error(`the close-time sweep did not finish within ${timeoutMs} ms`);
      return ms;
    };
    try {
      this.#late.stop();
      for (const user of this.#users) {
        const lease = this.#lease?.fileOf(user);
        const leases = this.#leasePrefix === undefined ? undefined : { prefix: this.#leasePrefix, own: lease === undefined ? [] : [lease] };
        const argv = sweepArgv(paths.shell, { prefix: `${this.prefix}-` }, leases);
        const { exitCode } = await transport.run(argv, { user, timeoutMs: left() });
        if (exitCode !== 0) throw new Error(`the close-time sweep ended with ${exitCode === null ? 'a signal' : `exit status ${exitCode}`}`);
        // The background commands it started are gone with the sweep: so are their records.
        await this.background.removeOwn(user, left());
        // A terminal command's record goes with its follower, unless the follower was swept first.
        if (this.#terminalUsers.has(user)) {
          const removed = await transport.run(recordsArgv(paths.shell, 'remove', `${this.#settings.recordBase ?? DEFAULT_RECORD_BASE}tty-${this.prefix}-`), { user, timeoutMs: left() });
          if (removed.exitCode !== 0) throw new Error(`removing the terminal records ended with exit status ${removed.exitCode}`);
        }
      }
    } finally {
      this.#channels?.close();
    }
  }
}
