/**
 * The sweeps that go on after a command's fate became unknown (ADR-0033,
 * dated note "Sweeps that outlast the request bound").
 *
 * A start whose outcome is unknown, or a tree whose kill could not be
 * confirmed, gets one bounded attempt in the driver (the retry policy,
 * within `requestTimeoutMs`), and the caller is told at once. On a starved
 * backend that attempt may go unanswered, and a start the backend received
 * but had not yet applied may begin after a sweep that found nothing: the
 * command would then run on until the sandbox is closed. So the same
 * `abandon` helper (SIGKILL to the supervisor that carries the id, then to
 * everything tagged with it) goes on here, in the background, at waits that
 * double from {@link FIRST_WAIT_MS} to {@link LONGEST_WAIT_MS}, until the
 * window has passed with at least one sweep answered since the command
 * became unknown, or the handle is closed (whose sweep by prefix supersedes
 * them all).
 */
import { abandonArgv } from './helpers.js';
import type { RemoteTransport } from './transport.js';

/** The first background sweep comes this long after the driver's own bounded attempt. */
export const FIRST_WAIT_MS = 250;
/** Waits between background sweeps double up to this. */
export const LONGEST_WAIT_MS = 5_000;

/** The default window of the background sweeps of one command: four request bounds, at least a minute. */
export function lateSweepWindowMs(requestTimeoutMs: number): number {
  return Math.max(60_000, 4 * requestTimeoutMs);
}

/** What {@link LateSweeps} needs of the handle. */
export interface LateSweepSettings {
  readonly transport: RemoteTransport;
  readonly shell: string;
  readonly requestTimeoutMs: number;
  /** How long one command is swept again after its fate became unknown, in ms. */
  readonly windowMs: number;
}

/** The background sweeps of one sandbox handle. */
export class LateSweeps {
  readonly #settings: LateSweepSettings;
  readonly #stopped = new AbortController();
  /** Ids being swept now: a second report of the same id does not start a second loop. */
  readonly #active = new Set<string>();

  constructor(settings: LateSweepSettings) {
    this.#settings = settings;
  }

  /** How many commands are being swept in the background now. */
  get pending(): number {
    return this.#active.size;
  }

  /** Starts sweeping `id` (as `user`) in the background; nothing once stopped or while it is already swept. */
  track(id: string, user: string | undefined): void {
    if (this.#stopped.signal.aborted || this.#active.has(id)) return;
    this.#active.add(id);
    void this.#loop(id, user)
      .catch(() => undefined)
      .finally(() => this.#active.delete(id));
  }

  /**
   * Stops every loop: the close-time sweep supersedes them. A sweep in flight is not waited for
   * (close() has its own bound); it ends by its request bound, and no other starts.
   */
  stop(): void {
    this.#stopped.abort();
  }

  async #loop(id: string, user: string | undefined): Promise<void> {
    const { transport, shell, requestTimeoutMs, windowMs } = this.#settings;
    const argv = abandonArgv(shell, id);
    const until = performance.now() + windowMs;
    let wait = FIRST_WAIT_MS;
    let answered = false;
    for (;;) {
      if (!(await this.#pause(wait))) return;
      wait = Math.min(wait * 2, LONGEST_WAIT_MS);
      try {
        const { exitCode } = await transport.run(argv, { user, timeoutMs: requestTimeoutMs });
        // Exit 1: something was still being killed after 50 rounds; it is looked at again.
        if (exitCode === 0) answered = true;
      } catch {
        // Unanswered again: the next round tries once more.
      }
      if (answered && performance.now() >= until) return;
    }
  }

  /** Resolves true after `ms`, false at once when stopped; never holds the process open. */
  #pause(ms: number): Promise<boolean> {
    const signal = this.#stopped.signal;
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onStop);
        resolve(true);
      }, ms);
      timer.unref();
      const onStop = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener('abort', onStop, { once: true });
    });
  }
}
