/**
 * The owner lease (spec 1.4, the owner-loss rule; ADR-0049): how a remote
 * command learns that the process that started it is gone.
 *
 * An exec-style backend keeps a command running when its client goes away
 * (`docker exec` survives its client, moby 9098; envd and Vercel keep a
 * command whose stream closed; sshd does not end a session's command when
 * the connection drops). So the host renews a lease in the sandbox while
 * its foreground commands run, and each of their supervisors watches it:
 * once no renewal came for `lapseMs` on the sandbox's own clock, the owner
 * died or lost its link for good, and the supervisor gives the tree the
 * termination sequence itself.
 *
 * - One lease file per handle and account, `${recordBase}owner-${prefix}-N`,
 *   holding the sandbox's uptime (in centiseconds) at which it lapses; the
 *   supervisor writes it as it starts, so a command that ends within
 *   `renewMs` costs no request beyond the backend's own.
 * - Renewed every `renewMs` while at least one foreground command of that
 *   account runs: one helper request each (`lease`), never two at once.
 *   The timer never keeps the host process alive.
 * - Removed at close, by the close-time sweep's own request. A lease whose
 *   owner died goes when a supervisor sees it lapse, else at the next
 *   renewal or close of any handle on the sandbox (each removes the lapsed).
 *
 * The bound a sandbox states, `termination.ownerLossMs`, is `lapseMs` +
 * the grace period + {@link OWNER_LOSS_MARGIN_MS} (the supervisor looks at
 * the lease at most every 0.5 s, and SIGKILL and the sweep take a moment on
 * a loaded sandbox).
 */
import { leaseArgv } from './helpers.js';
import type { SupervisorLease } from './supervisor.js';
import type { RemoteTransport } from './transport.js';

/** How often the host renews the lease, and how long a renewal holds, in ms. */
export interface OwnerLeaseTimes {
  /** Between renewals (default 2000). */
  readonly renewMs: number;
  /** How long after the latest renewal the owner counts as lost (default 6000): a few renewals may fail or come late first. */
  readonly lapseMs: number;
}

/** The defaults: an owner is lost after three missed renewals, and its commands end within 10 s with the default grace period. */
export const DEFAULT_OWNER_LEASE: OwnerLeaseTimes = Object.freeze({ renewMs: 2_000, lapseMs: 6_000 });

/** What {@link ownerLossMs} adds to the lapse and the grace period. */
export const OWNER_LOSS_MARGIN_MS = 2_000;

/**
 * The bound within which a foreground command's tree is gone once its owner
 * is lost: what a remote adapter states as `termination.ownerLossMs`.
 *
 * @example
 * ```ts
 * import { DEFAULT_OWNER_LEASE, ownerLossMs } from '@sandstream/remote';
 * ownerLossMs(DEFAULT_OWNER_LEASE, 2_000); // 10000
 * ```
 */
export function ownerLossMs(times: OwnerLeaseTimes, graceMs: number): number {
  return times.lapseMs + graceMs + OWNER_LOSS_MARGIN_MS;
}

/**
 * The lease times an adapter's option gives, checked: `renewMs` at least 100
 * and below `lapseMs`, both finite. Undefined: {@link DEFAULT_OWNER_LEASE}.
 */
export function ownerLeaseTimes(value: Partial<OwnerLeaseTimes> | undefined): OwnerLeaseTimes {
  const times = { ...DEFAULT_OWNER_LEASE, ...value };
  if (!Number.isFinite(times.renewMs) || !Number.isFinite(times.lapseMs) || times.renewMs < 100 || times.renewMs >= times.lapseMs) {
    throw new TypeError(`an owner lease renews every 100 ms or more and more often than it lapses, got ${JSON.stringify(times)}`);
  }
  return times;
}

/** What one account's lease holds. */
interface AccountLease {
  readonly file: string;
  /** Foreground commands of the account running now. */
  running: number;
}

/** The owner leases of one sandbox handle, one per account; see the module comment. */
export class OwnerLease {
  readonly #transport: RemoteTransport;
  readonly #shell: string;
  readonly #base: string;
  readonly #lapsedPrefix: string;
  readonly #times: OwnerLeaseTimes;
  readonly #graceMs: number;
  readonly #requestTimeoutMs: number;
  readonly #accounts = new Map<string | undefined, AccountLease>();
  #timer: NodeJS.Timeout | undefined;
  #renewing = false;
  #stopped = false;

  /**
   * @param base - Where the files are made: `${base}N`, e.g. `${recordBase}owner-${prefix}-`.
   * @param lapsedPrefix - What every handle's lease file in the sandbox starts with
   *   (`${recordBase}owner-`): a renewal removes those that lapsed.
   */
  constructor(options: { transport: RemoteTransport; shell: string; base: string; lapsedPrefix: string; times: OwnerLeaseTimes; graceMs: number; requestTimeoutMs: number }) {
    this.#transport = options.transport;
    this.#shell = options.shell;
    this.#base = options.base;
    this.#lapsedPrefix = options.lapsedPrefix;
    this.#times = options.times;
    this.#graceMs = options.graceMs;
    this.#requestTimeoutMs = options.requestTimeoutMs;
  }

  /**
   * The lease a foreground command as `user` watches, counted as running
   * (and so renewed) until the returned `release` is called, once.
   */
  hold(user: string | undefined): { readonly lease: SupervisorLease; readonly release: () => void } {
    let account = this.#accounts.get(user);
    if (account === undefined) {
      account = { file: `${this.#base}${this.#accounts.size}`, running: 0 };
      this.#accounts.set(user, account);
    }
    const held = account;
    held.running += 1;
    this.#schedule();
    let released = false;
    return {
      lease: { file: held.file, lapseMs: this.#times.lapseMs, graceMs: this.#graceMs },
      release: () => {
        if (released) return;
        released = true;
        held.running -= 1;
      },
    };
  }

  /** The file of `user`'s lease, if a command as that account ever held one. */
  fileOf(user: string | undefined): string | undefined {
    return this.#accounts.get(user)?.file;
  }

  /** No renewal from now on (the handle closes: its commands are swept). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#renewing || this.#stopped) return;
    this.#timer = setTimeout(() => void this.#renew(), this.#times.renewMs);
    // A lease never keeps its owner alive: an owner that exits is what it exists to notice.
    this.#timer.unref();
  }

  /** One renewal of every account with a command running; the next is scheduled from its start. */
  async #renew(): Promise<void> {
    this.#timer = undefined;
    const due = [...this.#accounts].filter(([, account]) => account.running > 0);
    if (due.length === 0 || this.#stopped) return;
    this.#renewing = true;
    const started = performance.now();
    const timeoutMs = Math.min(this.#requestTimeoutMs, this.#times.lapseMs);
    // A renewal that fails is not repeated at once: the next comes in renewMs, and the lapse
    // allows for a few missing; a link that stays down is what the lease is for.
    await Promise.all(
      due.map(([user, account]) => this.#transport.run(leaseArgv(this.#shell, account.file, this.#times.lapseMs, this.#lapsedPrefix), { user, timeoutMs }).catch(() => undefined)),
    );
    this.#renewing = false;
    if (this.#stopped || ![...this.#accounts.values()].some((account) => account.running > 0)) return;
    this.#timer = setTimeout(() => void this.#renew(), Math.max(0, this.#times.renewMs - (performance.now() - started)));
    this.#timer.unref();
  }
}
