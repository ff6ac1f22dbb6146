import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineSplitter, type OutputLine } from '../src/line-splitter.js';

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

function split(max: number, chunks: readonly (readonly ['stdout' | 'stderr', Uint8Array])[]): OutputLine[] {
  const splitter = new LineSplitter(max);
  return [...chunks.flatMap(([stream, data]) => splitter.push(stream, data)), ...splitter.end()];
}

describe('LineSplitter', () => {
  it('gives each line once its newline arrives, the final lines without one at the end, stdout first', () => {
    const splitter = new LineSplitter(100);
    expect(splitter.push('stdout', encode('a\nb'))).toEqual([{ stream: 'stdout', text: 'a\n', partial: false }]);
    expect(splitter.push('stderr', encode('x'))).toEqual([]);
    expect(splitter.push('stdout', encode('c\n'))).toEqual([{ stream: 'stdout', text: 'bc\n', partial: false }]);
    expect(splitter.push('stderr', encode('y'))).toEqual([]);
    expect(splitter.push('stdout', encode('tail'))).toEqual([]);
    expect(splitter.end()).toEqual([
      { stream: 'stdout', text: 'tail', partial: false },
      { stream: 'stderr', text: 'xy', partial: false },
    ]);
  });

  it('decodes a character split across chunks', () => {
    const bytes = encode('é\n');
    expect(split(100, [['stdout', bytes.slice(0, 1)], ['stdout', bytes.slice(1)]])).toEqual([{ stream: 'stdout', text: 'é\n', partial: false }]);
  });

  it('hands out a line longer than the bound in pieces flagged partial, the last piece not', () => {
    expect(split(4, [['stdout', encode('abcdefghij\nkl\n')]])).toEqual([
      { stream: 'stdout', text: 'abcd', partial: true },
      { stream: 'stdout', text: 'efgh', partial: true },
      { stream: 'stdout', text: 'ij\n', partial: false },
      { stream: 'stdout', text: 'kl\n', partial: false },
    ]);
  });

  it('for any chunking, each stream\'s pieces concatenate to its decoded bytes, none longer than the bound, every full line ending in a newline', () => {
    const chunk = fc.tuple(fc.constantFrom('stdout' as const, 'stderr' as const), fc.string({ unit: fc.constantFrom('a', 'é', '\n', '€') }).map(encode));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(chunk, { maxLength: 30 }), (max, chunks) => {
        const pieces = split(max, chunks);
        for (const stream of ['stdout', 'stderr'] as const) {
          const bytes = Buffer.concat(chunks.filter(([s]) => s === stream).map(([, data]) => data));
          const mine = pieces.filter((p) => p.stream === stream);
          expect(mine.map((p) => p.text).join('')).toBe(new TextDecoder().decode(bytes));
          for (const [i, piece] of mine.entries()) {
            expect(piece.text.length).toBeLessThanOrEqual(max);
            if (!piece.partial && i < mine.length - 1) expect(piece.text.endsWith('\n')).toBe(true);
          }
        }
      }),
    );
  });
});
