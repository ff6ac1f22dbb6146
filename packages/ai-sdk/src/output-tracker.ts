// What the exec tool knows of a running command's output: the bytes kept up
// to the cap, the line and byte counts, and the tail a preliminary result shows.
import { TextDecoder } from 'node:util';
import type { OutputChunk, StreamName } from '@sandstream/types';
import { Capture } from '@sandstream/types/runtime';

/** Counts of one stream, as the results report them. */
export interface StreamCounts {
  /** Bytes the command wrote, past the cap too. */
  bytes: number;
  /** Newline-terminated lines so far; at the end, an unterminated last line counts too. */
  lines: number;
  /** Whether the last byte was a newline (or nothing came). */
  atLineStart: boolean;
}

/** Tracks one command's output for the exec tool's results. */
export class OutputTracker {
  readonly #kept: Record<StreamName, Capture>;
  readonly counts: Record<StreamName, StreamCounts> = {
    stdout: { bytes: 0, lines: 0, atLineStart: true },
    stderr: { bytes: 0, lines: 0, atLineStart: true },
  };
  readonly #decoders: Record<StreamName, TextDecoder> = {
    stdout: new TextDecoder('utf-8', { ignoreBOM: true }),
    stderr: new TextDecoder('utf-8', { ignoreBOM: true }),
  };
  #tail = '';

  constructor(
    cap: number,
    private readonly tailChars: number,
  ) {
    this.#kept = { stdout: new Capture(cap), stderr: new Capture(cap) };
  }

  push(chunk: OutputChunk): void {
    const { stream, data } = chunk;
    this.#kept[stream].add(data);
    const counts = this.counts[stream];
    counts.bytes += data.byteLength;
    for (const byte of data) if (byte === 0x0a) counts.lines += 1;
    if (data.byteLength > 0) counts.atLineStart = data[data.byteLength - 1] === 0x0a;
    // Both streams in arrival order, as a terminal would show them; only the end is kept.
    this.#tail += this.#decoders[stream].decode(data, { stream: true });
    if (this.#tail.length > 2 * this.tailChars) this.#tail = this.#tail.slice(-this.tailChars);
  }

  /** The last `tailChars` characters of the output so far. */
  tail(): string {
    return this.#tail.slice(-this.tailChars);
  }

  /** Lines of a stream, counting an unterminated last line once the output ended. */
  lines(stream: StreamName, ended: boolean): number {
    const counts = this.counts[stream];
    return counts.lines + (ended && !counts.atLineStart ? 1 : 0);
  }

  get truncated(): boolean {
    return this.#kept.stdout.truncated || this.#kept.stderr.truncated;
  }

  text(stream: StreamName): string {
    return this.#kept[stream].text();
  }
}
