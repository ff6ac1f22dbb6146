import { StdinClosed, TransportError } from '../errors.js';
import type { ProcessDriver } from './driver.js';
import { asTransport } from './transport.js';

/** What the channel needs to know of its command. */
export interface StdinHost {
  /** Resolves once the start was confirmed or the command's fate is known. */
  whenStartedOrSettled(): Promise<void>;
  /** True once the command's fate is known. */
  readonly settled: boolean;
}

/**
 * The standard input of one command, exactly once: writes reach the driver
 * one at a time, in call order. A write whose delivery is uncertain (the
 * driver rejected it with anything but `StdinClosed`) rejects with
 * `TransportError`, and so does every later write, since sending more after
 * bytes that may or may not have arrived could deliver them out of order or
 * twice; `end()` still closes the pipe.
 */
export class StdinChannel {
  private chain: Promise<void> = Promise.resolve();
  private ending: Promise<void> | undefined;
  /** The pipe was found closed (the command exited or stopped reading). */
  private foundClosed = false;
  /** Why no more writes are sent: an earlier write's delivery is uncertain. */
  private uncertainty: TransportError | undefined;

  constructor(
    private readonly driver: ProcessDriver,
    private readonly host: StdinHost,
  ) {}

  /** True once `end()` was called or the pipe was found closed. */
  get closed(): boolean {
    return this.ending !== undefined || this.foundClosed || this.host.settled;
  }

  write(data: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new StdinClosed('standard input is closed'));
    if (this.uncertainty !== undefined) return Promise.reject(this.refusal());
    // Writes queued before end() still go out, in call order; end() is
    // chained behind them.
    const write = this.chain.then(async () => {
      await this.host.whenStartedOrSettled();
      if (this.uncertainty !== undefined) throw this.refusal();
      if (this.foundClosed || this.host.settled) {
        this.foundClosed = true;
        throw new StdinClosed('the command has exited; standard input is closed');
      }
      try {
        await this.driver.writeStdin(data);
      } catch (error) {
        if (error instanceof StdinClosed) {
          this.foundClosed = true;
          throw error;
        }
        const failure = asTransport(error, 'writing standard input') as TransportError;
        this.uncertainty = failure;
        throw failure;
      }
    });
    this.chain = write.catch(() => undefined);
    return write;
  }

  end(): Promise<void> {
    this.ending ??= this.chain.then(async () => {
      await this.host.whenStartedOrSettled();
      if (this.host.settled) return;
      try {
        await this.driver.closeStdin();
      } catch (error) {
        if (!(error instanceof StdinClosed)) throw asTransport(error, 'closing standard input');
      }
    });
    return this.ending;
  }

  /**
   * Writes one-shot input, then closes standard input; the input is fed in
   * the background, so the command need not read it all. Resolves with the
   * failure when the link broke; a command that exits without reading all
   * of it is fine, as a shell treats a closed pipe.
   */
  async feedOnce(input: Uint8Array): Promise<Error | undefined> {
    try {
      await this.driver.writeStdin(input);
      await this.driver.closeStdin();
      return undefined;
    } catch (error) {
      return error instanceof StdinClosed ? undefined : asTransport(error, 'writing the input');
    }
  }

  private refusal(): TransportError {
    return new TransportError(
      "an earlier write's delivery is uncertain; standard input accepts no more writes (end() still closes it)",
      { cause: this.uncertainty },
    );
  }
}
