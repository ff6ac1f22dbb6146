import { TextDecoder } from 'node:util';
import type { OutputChunk, StreamName } from './schema/output-chunk.js';

/** One line of a command's output. */
export interface Line {
  readonly stream: StreamName;
  /** The decoded line, its trailing `\n` kept; the final line may lack one. */
  readonly text: string;
}

/**
 * Splits tagged chunks into per-stream lines, in the order they complete;
 * final lines without a newline come last, stdout's before stderr's. UTF-8 is
 * decoded correctly across chunk boundaries, the newline is kept, and a
 * final line without one is still delivered once the chunks end.
 *
 * Leaving the loop early leaves the underlying iteration too, so over a
 * Process it terminates the command, as breaking out of the Process would.
 *
 * @example
 * ```ts
 * import { lines, type Sandbox } from '@sandstream/types';
 * async function tail(sb: Sandbox): Promise<void> {
 *   await using proc = sb.stream(['make', 'test']);
 *   for await (const line of lines(proc)) {
 *     console.log(`[${line.stream}] ${line.text.trimEnd()}`);
 *   }
 * }
 * ```
 */
export async function* lines(chunks: AsyncIterable<OutputChunk>): AsyncGenerator<Line, void, undefined> {
  const decoders: Record<StreamName, TextDecoder> = {
    // ignoreBOM: the bytes are the command's; a leading BOM is part of its text.
    stdout: new TextDecoder('utf-8', { ignoreBOM: true }),
    stderr: new TextDecoder('utf-8', { ignoreBOM: true }),
  };
  const pending: Record<StreamName, string> = { stdout: '', stderr: '' };
  for await (const chunk of chunks) {
    const stream = chunk.stream;
    const fresh = decoders[stream].decode(chunk.data, { stream: true });
    // Only the new text is searched, so a long line arriving in many chunks
    // costs linear time rather than quadratic.
    let start = 0;
    for (let end = fresh.indexOf('\n'); end !== -1; end = fresh.indexOf('\n', start)) {
      const line = pending[stream] + fresh.slice(start, end + 1);
      pending[stream] = '';
      start = end + 1;
      yield { stream, text: line };
    }
    pending[stream] += fresh.slice(start);
  }
  for (const stream of ['stdout', 'stderr'] as const) {
    const rest = pending[stream] + decoders[stream].decode();
    if (rest !== '') yield { stream, text: rest };
  }
}
