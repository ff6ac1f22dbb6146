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

/** One caller's write, waiting for the driver. */
interface PendingWrite {
  readonly data: Uint8Array;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Bytes one driver call may carry when writes queued behind a slow one are
 * sent together: big enough that a remote backend pays one round trip for
 * many small writes, small enough not to hold a large copy.
 */
const BATCH_BYTES = 1024 * 1024;

/**
 * The standard input of one command, exactly once: bytes reach the driver
 * in call order, one driver call at a time. Writes that queue up while a
 * call is in flight go out together in the next call, so a remote backend
 * pays one round trip per batch rather than per write. A write whose
 * delivery is uncertain (the driver rejected it with anything but
 * `StdinClosed`) rejects with `TransportError`, and so does every later
 * write, since sending more after bytes that may or may not have arrived
 * could deliver them out of order or twice; `end()` still closes the pipe.
 */
export class StdinChannel {
  private readonly pending: PendingWrite[] = [];
  /** The loop handing queued writes to the driver, while it runs. Never rejects. */
  private sending: Promise<void> | undefined;
  private ending: Promise<void> | undefined;
  /** The pipe was found closed (the command exited or stopped reading). */
  private foundClosed = false;
  /** Why no more writes are sent: an earlier write's delivery is uncertain. */
  private uncertainty: TransportError | undefined;
  /** Under a terminal: the last byte queued, which decides how end-of-file is typed. */
  private lastByte: number | undefined;

  /**
   * @param terminal - the command runs on a terminal (spec 1.5): ending its
   * input types end-of-file rather than closing anything, since the
   * terminal stays the command's output too (ADR-0052).
   */
  constructor(
    private readonly driver: ProcessDriver,
    private readonly host: StdinHost,
    private readonly terminal = false,
  ) {}

  /** True once `end()` was called or the pipe was found closed. */
  get closed(): boolean {
    return this.ending !== undefined || this.foundClosed || this.host.settled;
  }

  write(data: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new StdinClosed('standard input is closed'));
    if (this.uncertainty !== undefined) return Promise.reject(this.refusal());
    if (data.byteLength > 0) this.lastByte = data[data.byteLength - 1];
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ data, resolve, reject });
      this.send();
    });
  }

  /**
   * Writes queued before end() still go out, in call order; end() follows
   * them. On a terminal it types end-of-file instead of closing: the
   * terminal stays open for the command's output.
   */
  end(): Promise<void> {
    this.ending ??= (async () => {
      while (this.sending !== undefined) await this.sending;
      await this.host.whenStartedOrSettled();
      if (this.host.settled) return;
      // After a write of uncertain delivery, typed bytes could arrive out of order: nothing is typed.
      if (this.terminal && this.uncertainty !== undefined) return;
      try {
        await (this.terminal ? this.driver.writeStdin(endOfFile(this.lastByte)) : this.driver.closeStdin());
      } catch (error) {
        if (!(error instanceof StdinClosed)) throw asTransport(error, 'closing standard input');
      }
    })();
    return this.ending;
  }

  private send(): void {
    this.sending ??= this.drain().finally(() => {
      this.sending = undefined;
      // A write queued after the loop's last look goes out in a new loop.
      if (this.pending.length > 0) this.send();
    });
  }

  private async drain(): Promise<void> {
    await this.host.whenStartedOrSettled();
    while (this.pending.length > 0) {
      const batch = this.takeBatch();
      if (this.uncertainty !== undefined) {
        for (const write of batch) write.reject(this.refusal());
        continue;
      }
      if (this.foundClosed || this.host.settled) {
        this.foundClosed = true;
        for (const write of batch) write.reject(new StdinClosed('the command has exited; standard input is closed'));
        continue;
      }
      try {
        await this.driver.writeStdin(joined(batch));
        for (const write of batch) write.resolve();
      } catch (error) {
        if (error instanceof StdinClosed) {
          this.foundClosed = true;
          for (const write of batch) write.reject(error);
          continue;
        }
        const failure = asTransport(error, 'writing standard input') as TransportError;
        this.uncertainty = failure;
        for (const write of batch) write.reject(failure);
      }
    }
  }

  /** The oldest queued writes, at least one, up to BATCH_BYTES in all. */
  private takeBatch(): PendingWrite[] {
    let bytes = this.pending[0]!.data.byteLength;
    let count = 1;
    while (count < this.pending.length && bytes + this.pending[count]!.data.byteLength <= BATCH_BYTES) {
      bytes += this.pending[count]!.data.byteLength;
      count += 1;
    }
    return this.pending.splice(0, count);
  }

  /**
   * Writes one-shot input, then closes standard input; the input is fed in
   * the background, so the command need not read it all. Resolves with the
   * failure when the link broke; a command that exits without reading all
   * of it is fine, as a shell treats a closed pipe.
   */
  async feedOnce(input: Uint8Array): Promise<Error | undefined> {
    try {
      if (input.byteLength > 0) await this.driver.writeStdin(input);
      if (this.terminal) await this.driver.writeStdin(endOfFile(input.byteLength > 0 ? input[input.byteLength - 1] : undefined));
      else await this.driver.closeStdin();
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

const EOF = 0x04;
/** Bytes after which a terminal's line is empty: CR, NL, and an end-of-file that handed a line over. */
const LINE_ENDS = new Set([0x0d, 0x0a, EOF]);

/**
 * End-of-file as a terminal in canonical mode takes it (ADR-0052, T3): one
 * 0x04 on an empty line; on a line holding typed bytes the first 0x04 only
 * hands them over, so a second one follows.
 */
export function endOfFile(lastByte: number | undefined): Uint8Array {
  return lastByte === undefined || LINE_ENDS.has(lastByte) ? Uint8Array.of(EOF) : Uint8Array.of(EOF, EOF);
}

/** The batch's bytes as one buffer; a single write is passed on as it is. */
function joined(batch: readonly PendingWrite[]): Uint8Array {
  if (batch.length === 1) return batch[0]!.data;
  const out = new Uint8Array(batch.reduce((sum, write) => sum + write.data.byteLength, 0));
  let offset = 0;
  for (const write of batch) {
    out.set(write.data, offset);
    offset += write.data.byteLength;
  }
  return out;
}
