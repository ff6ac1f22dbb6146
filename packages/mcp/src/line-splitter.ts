import { TextDecoder } from 'node:util';
import type { StreamName } from '@sandstream/types';

/** One piece of output as a progress notification carries it. */
export interface OutputLine {
  readonly stream: StreamName;
  /** The decoded text, its trailing `\n` kept; the final line of a stream may lack one. */
  readonly text: string;
  /** True when the line was longer than the splitter's bound and this piece is not its end. */
  readonly partial: boolean;
}

/**
 * Splits each stream's bytes into lines as they arrive, synchronously, so the
 * caller can notify a line the moment its newline is read. Unlike `lines()` of
 * `@sandstream/types`, it holds at most `maxLineChars` of an unfinished line
 * per stream: a command that writes 64 MiB without a newline must not make the
 * server hold 64 MiB, so an overlong line is handed out in pieces flagged
 * `partial`, and no piece (so no notification) is longer than the bound.
 * UTF-8 is decoded across chunk boundaries.
 */
export class LineSplitter {
  readonly #maxLineChars: number;
  readonly #decoders: Record<StreamName, TextDecoder> = {
    // ignoreBOM: the bytes are the command's; a leading BOM is part of its text.
    stdout: new TextDecoder('utf-8', { ignoreBOM: true }),
    stderr: new TextDecoder('utf-8', { ignoreBOM: true }),
  };
  readonly #pending: Record<StreamName, string> = { stdout: '', stderr: '' };

  constructor(maxLineChars: number) {
    this.#maxLineChars = maxLineChars;
  }

  /** The lines (and pieces of overlong ones) that `data` completes, in order; none longer than the bound. */
  push(stream: StreamName, data: Uint8Array): OutputLine[] {
    const out: OutputLine[] = [];
    const fresh = this.#decoders[stream].decode(data, { stream: true });
    // Only the new text is searched, so a line arriving in many chunks costs
    // linear time, not quadratic.
    let start = 0;
    for (let end = fresh.indexOf('\n'); end !== -1; end = fresh.indexOf('\n', start)) {
      const line = this.#pieces(stream, this.#pending[stream] + fresh.slice(start, end + 1), out);
      out.push({ stream, text: line, partial: false });
      this.#pending[stream] = '';
      start = end + 1;
    }
    this.#pending[stream] = this.#pieces(stream, this.#pending[stream] + fresh.slice(start), out);
    return out;
  }

  /** Hands out `text` in partial pieces of the bound while it is longer; returns the rest. */
  #pieces(stream: StreamName, text: string, out: OutputLine[]): string {
    let rest = text;
    while (rest.length > this.#maxLineChars) {
      out.push({ stream, text: rest.slice(0, this.#maxLineChars), partial: true });
      rest = rest.slice(this.#maxLineChars);
    }
    return rest;
  }

  /** The final lines without a newline, stdout's before stderr's, once the output ended. */
  end(): OutputLine[] {
    const out: OutputLine[] = [];
    for (const stream of ['stdout', 'stderr'] as const) {
      const rest = this.#pending[stream] + this.#decoders[stream].decode();
      this.#pending[stream] = '';
      if (rest !== '') out.push({ stream, text: rest, partial: false });
    }
    return out;
  }
}
