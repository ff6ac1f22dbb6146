import { TextDecoder } from 'node:util';
import type { OutputChunk, StreamName } from './schema/output-chunk.js';

/** One line of a command's output. */
export interface Line {
  readonly stream: StreamName;
  /** The decoded line, its trailing `\n` kept; the final line may lack one. */
  readonly text: string;
}

/**
 * Splits tagged chunks into per-stream lines, in arrival order. UTF-8 is
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
    stdout: new TextDecoder('utf-8'),
    stderr: new TextDecoder('utf-8'),
  };
  const pending: Record<StreamName, string> = { stdout: '', stderr: '' };
  for await (const chunk of chunks) {
    const text = pending[chunk.stream] + decoders[chunk.stream].decode(chunk.data, { stream: true });
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      yield { stream: chunk.stream, text: text.slice(start, end + 1) };
      start = end + 1;
    }
    pending[chunk.stream] = text.slice(start);
  }
  for (const stream of ['stdout', 'stderr'] as const) {
    const rest = pending[stream] + decoders[stream].decode();
    if (rest !== '') yield { stream, text: rest };
  }
}
