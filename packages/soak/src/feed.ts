/**
 * Feeding a command's standard input the way a careful caller does: in
 * pieces, then end-of-file, and end-of-file even when a write failed.
 */
import type { StdinWriter } from '@sandstream/types';
import type { Progress } from './progress.js';

/**
 * Writes `data` in pieces of at most `piece` bytes, then ends standard input.
 * A failed write still ends it (the contract keeps `end()` working after a
 * failed write), so a command that reads to end-of-file, such as `cat`, is
 * not left waiting for input that will never come; the write's error is the
 * one that rejects, any error of that `end()` is dropped.
 */
export async function feed(writer: StdinWriter, data: Uint8Array, piece: number, progress?: Progress): Promise<void> {
  if (progress !== undefined) {
    progress.writesPlanned = Math.ceil(data.byteLength / piece);
    progress.stdin = 'writing';
  }
  try {
    for (let offset = 0; offset < data.byteLength; offset += piece) {
      await writer.write(data.subarray(offset, offset + piece));
      progress?.wrote();
    }
  } catch (error) {
    if (progress !== undefined) progress.stdin = 'failed';
    await writer.end().catch(() => undefined);
    throw error;
  }
  if (progress !== undefined) progress.stdin = 'ending';
  await writer.end();
  if (progress !== undefined) progress.stdin = 'ended';
}
