import { CapabilityNotSupported, InvalidState, StdinClosed, TransportError } from '../errors.js';
import type { TerminalSize } from '../options.js';
import type { ProcessDriver } from './driver.js';
import { validateTerminalSize } from './execution-plan.js';
import { TIMED_OUT, within } from './timers.js';
import { asTransport } from './transport.js';

/** What resizing needs of its command: a {@link ProcessCore}, seen through the parts it uses. */
export interface ResizeHost {
  readonly driver: ProcessDriver;
  readonly settled: boolean;
  readonly settings: { readonly killWaitMs: number };
  whenStartedOrSettled(): Promise<void>;
}

/**
 * The terminal of one command (spec 1.5, T4): resizes reach the driver one
 * at a time, in call order, each bounded by the kill wait; the size last
 * set is kept for the command's listing.
 */
export class TerminalResizer {
  /** The size last set: the one asked at the start until a resize succeeds. */
  size: TerminalSize;
  /** The previous resize, settled either way: the next one waits for it. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly host: ResizeHost,
    initial: TerminalSize,
  ) {
    this.size = initial;
  }

  resize(cols: unknown, rows: unknown): Promise<void> {
    let size: TerminalSize;
    try {
      size = validateTerminalSize({ cols, rows });
    } catch (error) {
      return Promise.reject(error);
    }
    const attempt = this.queue.then(() => this.apply(size));
    this.queue = attempt.catch(() => undefined);
    return attempt;
  }

  private async apply(size: TerminalSize): Promise<void> {
    const { driver, settings } = this.host;
    if (driver.resize === undefined) throw new CapabilityNotSupported('pty', 'resize()');
    await this.host.whenStartedOrSettled();
    if (this.host.settled) throw new InvalidState('the command has ended; its terminal is gone');
    const outcome = await within(
      driver.resize(size.cols, size.rows).then(
        () => undefined,
        // The command may end while the resize is under way (a driver finds its terminal closed):
        // that is the caller's InvalidState, not a broken link.
        (error: unknown) =>
          error instanceof StdinClosed ? new InvalidState('the command has ended; its terminal is gone') : asTransport(error, 'resizing the terminal', [InvalidState]),
      ),
      settings.killWaitMs,
    );
    if (outcome === TIMED_OUT) throw new TransportError(`the backend did not confirm the resize within ${settings.killWaitMs} ms`);
    if (outcome !== undefined) throw outcome;
    this.size = size;
  }
}

/** The refusal of `resize()` on a Process started without `pty`. */
export function noTerminal(): Promise<never> {
  return Promise.reject(new InvalidState('this Process has no terminal: start it with the pty option to resize it'));
}
