/**
 * The soak's stdin writer ends standard input after a failed write, so a
 * command reading to end-of-file ends. Before, a failed write left `cat`
 * waiting for good (the hangs of RELIABILITY.md's e2b run under a low
 * descriptor limit). The command is a real `cat`; only the failure of its
 * second write is made up, as a transport that lost its connection gives it.
 */
import { createLocalSandbox } from '@sandstream/adapter-local';
import { TransportError, type StdinWriter } from '@sandstream/types';
import { describe, expect, it } from 'vitest';
import { feed } from '../src/feed.js';

/** `writer`, with every write after the first rejecting as a lost connection does. */
function failingAfterFirstWrite(writer: StdinWriter): StdinWriter & { ends: number } {
  let writes = 0;
  const wrapped = {
    ends: 0,
    get closed() {
      return writer.closed;
    },
    write: (data: Uint8Array | string) => (++writes === 1 ? writer.write(data) : Promise.reject(new TransportError('the connection was lost'))),
    end: () => {
      wrapped.ends++;
      return writer.end();
    },
  };
  return wrapped;
}

describe('feed', () => {
  it('ends standard input after a failed write, rejects with the write error, and the reader ends', async () => {
    await using sb = await createLocalSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    const writer = failingAfterFirstWrite(proc.stdin!);
    const fed = await feed(writer, new TextEncoder().encode('first second'), 6).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(fed).toBeInstanceOf(TransportError);
    expect(writer.ends).toBe(1);
    expect(proc.stdin!.closed).toBe(true);
    // cat saw end-of-file: it exits by itself with the one piece that was written.
    let out = '';
    const decoder = new TextDecoder();
    for await (const chunk of proc) out += decoder.decode(chunk.data, { stream: true });
    const result = await proc.wait();
    expect(result.exitCode).toBe(0);
    expect(out).toBe('first ');
  });

  it("drops end()'s own error: the write's error is the one that rejects", async () => {
    const writer: StdinWriter = {
      closed: false,
      write: () => Promise.reject(new TransportError('write lost')),
      end: () => Promise.reject(new TransportError('end lost')),
    };
    await expect(feed(writer, new Uint8Array(4), 2)).rejects.toThrow('write lost');
  });
});
