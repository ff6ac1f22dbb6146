import { describe, expect, it } from 'vitest';
import { lines, type Line } from '../src/lines.js';
import { createExecResult } from '../src/result.js';
import type { OutputChunk, StreamName } from '../src/schema/output-chunk.js';

const encoder = new TextEncoder();

function chunk(stream: StreamName, data: string | number[]): OutputChunk {
  return { stream, data: typeof data === 'string' ? encoder.encode(data) : Uint8Array.from(data) };
}

async function* source(chunks: OutputChunk[]): AsyncGenerator<OutputChunk> {
  for (const item of chunks) yield item;
}

async function collect(chunks: OutputChunk[]): Promise<Line[]> {
  const out: Line[] = [];
  for await (const line of lines(source(chunks))) out.push(line);
  return out;
}

const out = (text: string): Line => ({ stream: 'stdout', text });
const err = (text: string): Line => ({ stream: 'stderr', text });

describe('lines()', () => {
  it('keeps each line with its trailing newline', async () => {
    expect(await collect([chunk('stdout', 'a\nb\n\nc\r\n')])).toEqual([out('a\n'), out('b\n'), out('\n'), out('c\r\n')]);
  });

  it('joins a line split across chunks', async () => {
    expect(await collect([chunk('stdout', 'hel'), chunk('stdout', 'lo\nwor'), chunk('stdout', 'ld\n')])).toEqual([
      out('hello\n'),
      out('world\n'),
    ]);
  });

  it('flushes a final line that has no newline', async () => {
    expect(await collect([chunk('stdout', 'one\ntwo')])).toEqual([out('one\n'), out('two')]);
    expect(await collect([chunk('stdout', 'no newline at all')])).toEqual([out('no newline at all')]);
  });

  it('decodes a multibyte character split across chunks', async () => {
    const euro = [...encoder.encode('€')]; // e2 82 ac
    expect(await collect([chunk('stdout', [0x63, euro[0]!]), chunk('stdout', [euro[1]!, euro[2]!, 0x0a])])).toEqual([
      out('c€\n'),
    ]);
  });

  it('decodes a four-byte character delivered one byte per chunk', async () => {
    const bytes = [...encoder.encode('🦀\n')];
    expect(await collect(bytes.map((byte) => chunk('stdout', [byte])))).toEqual([out('🦀\n')]);
  });

  it('keeps a split character whole even when the other stream interleaves', async () => {
    const e = [...encoder.encode('é')]; // c3 a9
    expect(
      await collect([chunk('stdout', [0x63, 0x61, 0x66, e[0]!]), chunk('stderr', [0xff]), chunk('stdout', [e[1]!, 0x0a])]),
    ).toEqual([out('café\n'), err('\uFFFD')]);
  });

  it('keeps stdout and stderr separate', async () => {
    const result = await collect([
      chunk('stdout', 'out one '),
      chunk('stderr', 'err one\nerr '),
      chunk('stdout', 'continued\n'),
      chunk('stderr', 'two\n'),
    ]);
    expect(result).toEqual([err('err one\n'), out('out one continued\n'), err('err two\n')]);
  });

  it('flushes partial lines of both streams at the end, stdout first', async () => {
    expect(await collect([chunk('stderr', 'e'), chunk('stdout', 'o')])).toEqual([out('o'), err('e')]);
  });

  it('replaces invalid UTF-8 with U+FFFD, a truncated sequence at the end included', async () => {
    expect(await collect([chunk('stdout', [0x61, 0xff, 0x0a, 0xe2, 0x82])])).toEqual([out('a\uFFFD\n'), out('\uFFFD')]);
  });

  it('yields nothing for no output and for empty chunks', async () => {
    expect(await collect([])).toEqual([]);
    expect(await collect([chunk('stdout', ''), chunk('stderr', [])])).toEqual([]);
  });

  it('leaves the underlying iteration when the loop is left early', async () => {
    let returned = false;
    const chunks: AsyncIterable<OutputChunk> = {
      [Symbol.asyncIterator]() {
        let count = 0;
        return {
          next: async () => ({ value: chunk('stdout', `line ${++count}\n`), done: false as const }),
          return: async () => {
            returned = true;
            return { value: undefined, done: true as const };
          },
        };
      },
    };
    const seen: string[] = [];
    for await (const line of lines(chunks)) {
      seen.push(line.text);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual(['line 1\n', 'line 2\n']);
    expect(returned).toBe(true);
  });

  it('propagates an error of the underlying iteration', async () => {
    async function* failing(): AsyncGenerator<OutputChunk> {
      yield chunk('stdout', 'first\n');
      throw new Error('transport broke');
    }
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const line of lines(failing())) seen.push(line.text);
      })(),
    ).rejects.toThrow('transport broke');
    expect(seen).toEqual(['first\n']);
  });
});

describe('byte-order marks', () => {
  it('keeps a leading BOM, in lines() and in the text views of a result', async () => {
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, 0x41, 0x0a]);
    async function* one(): AsyncGenerator<OutputChunk> {
      yield { stream: 'stdout', data: bom };
    }
    const got: string[] = [];
    for await (const line of lines(one())) got.push(line.text);
    expect(got).toEqual(['\uFEFFA\n']);
    expect(createExecResult({ stdout: bom }).stdoutText).toBe('\uFEFFA\n');
  });
});
