import type { OutputChunk, Process } from '@sandstream/types';

/** Everything a Process delivered, per stream and in order. */
export interface Collected {
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  readonly chunks: readonly OutputChunk[];
}

/** Iterates a Process to the end, keeping every chunk. */
export async function collect(proc: Process): Promise<Collected> {
  const chunks: OutputChunk[] = [];
  for await (const chunk of proc) chunks.push({ stream: chunk.stream, data: Uint8Array.from(chunk.data) });
  const join = (stream: 'stdout' | 'stderr'): Uint8Array =>
    new Uint8Array(Buffer.concat(chunks.filter((c) => c.stream === stream).map((c) => c.data)));
  return { stdout: join('stdout'), stderr: join('stderr'), chunks };
}

/** All 256 byte values, in order. */
export const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);

/** A printf format that writes `bytes` exactly, using octal escapes only. */
export function printfFormat(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
}
