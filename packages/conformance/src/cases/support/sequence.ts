/** Numbered lines on both streams, and the checks of them, shared by the ordering and output-cap cases. */
import type { OutputChunk } from '@sandstream/types';
import { check, ConformanceFailure } from '../../assert.js';

export function copy(chunk: OutputChunk): OutputChunk {
  return { stream: chunk.stream, data: Uint8Array.from(chunk.data) };
}

export function join(chunks: readonly OutputChunk[], stream: 'stdout' | 'stderr'): Uint8Array {
  return new Uint8Array(Buffer.concat(chunks.filter((c) => c.stream === stream).map((c) => c.data)));
}

export const COUNT = 20_000;
// Interleaves sequence numbers on both streams, flushing often so the
// output arrives in many chunks.
export const SEQUENCE_SCRIPT = `awk 'BEGIN { for (i = 1; i <= ${COUNT}; i++) { print i; print i > "/dev/stderr"; if (i % 97 == 0) { fflush(); system("") } } }'`;

export function checkSequence(bytes: Uint8Array, what: string): void {
  const text = Buffer.from(bytes).toString('latin1');
  const numbers = text.split('\n');
  check(numbers.pop() === '', `${what} does not end with a newline`);
  check(numbers.length === COUNT, `${what} has ${numbers.length} lines, expected ${COUNT}: output was lost or duplicated`);
  for (let i = 0; i < COUNT; i++) {
    if (numbers[i] !== String(i + 1)) {
      throw new ConformanceFailure(`${what}: line ${i + 1} is ${JSON.stringify(numbers[i])}, expected ${i + 1}: out of order`);
    }
  }
}
