/**
 * The Engine's multiplexed stream (an exec without a TTY): frames of an
 * 8-byte header (stream 1 stdout or 2 stderr, three zero bytes, a 32-bit
 * big-endian length) and that many bytes. Cut anywhere by the socket;
 * {@link FrameSplitter} gives back each stream's bytes exactly.
 */
import type { StreamName } from '@sandstream/types';

const HEADER = 8;

/** Thrown for a header no Engine writes: the stream is not the one the adapter asked for. */
export class FrameError extends Error {}

/** Splits the multiplexed stream into each stream's bytes. */
export class FrameSplitter {
  /** Bytes of an unfinished header (fewer than 8). */
  #header: Buffer = Buffer.alloc(0);
  #stream: StreamName | undefined;
  /** Payload bytes still to come in the current frame. */
  #left = 0;

  /** Calls `emit` for each run of payload in `chunk`, in order. */
  push(chunk: Buffer, emit: (stream: StreamName, data: Uint8Array) => void): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.#left > 0) {
        const take = Math.min(this.#left, chunk.length - offset);
        emit(this.#stream!, chunk.subarray(offset, offset + take));
        this.#left -= take;
        offset += take;
        continue;
      }
      const need = HEADER - this.#header.length;
      const part = chunk.subarray(offset, offset + need);
      offset += part.length;
      this.#header = this.#header.length === 0 ? part : Buffer.concat([this.#header, part]);
      if (this.#header.length < HEADER) return;
      const kind = this.#header[0];
      if ((kind !== 1 && kind !== 2) || this.#header[1] !== 0 || this.#header[2] !== 0 || this.#header[3] !== 0) {
        throw new FrameError(`not a frame of the Engine's multiplexed stream (header ${this.#header.toString('hex')})`);
      }
      this.#stream = kind === 1 ? 'stdout' : 'stderr';
      this.#left = this.#header.readUInt32BE(4);
      this.#header = Buffer.alloc(0);
    }
  }

  /** Whether the stream stopped inside a frame (its end was cut off). */
  get partial(): boolean {
    return this.#left > 0 || this.#header.length > 0;
  }
}
