/**
 * Seed 002's deadlock, reproduced in shape: one log stream shared by a
 * stdout reader and a stderr reader, and a server that sends its next
 * record only after the client acted on the previous one. A pump
 * serialised by a lock, where a reader checks its own buffer and then
 * queues for the lock, loses the wakeup: the stdout reader takes its turn
 * pumping although its line was already routed to it, and blocks on the
 * stream for ever. The adapter's pump has no such lock: it pushes every
 * record to its consumer as it reads it.
 */
import { describe, expect, it } from 'vitest';
import type { LogLine } from '../src/api.js';
import { LogPump, type LogSource } from '../src/index.js';
import { within } from './helpers.js';

/**
 * A server shaped like a stdio MCP server that forwards its stderr: it logs
 * to stderr, answers on stdout, and sends the second answer only once the
 * client sent its second request (after reading the first answer).
 */
function scriptedServer(): { source: LogSource; secondRequest(): void } {
  let sendSecond!: () => void;
  const second = new Promise<void>((resolve) => (sendSecond = resolve));
  async function* records(): AsyncGenerator<LogLine> {
    // Both readers are waiting by now, the stderr reader (first to ask) pumping.
    await new Promise((r) => setTimeout(r, 20));
    yield { stream: 'stdout', data: 'reply 1\n' };
    await second;
    yield { stream: 'stderr', data: 'server: got request 2\n' };
    yield { stream: 'stdout', data: 'reply 2\n' };
  }
  const iterator = records();
  const source: LogSource = Object.assign(
    { [Symbol.asyncIterator]: () => iterator },
    { close: () => void iterator.return(undefined) },
  );
  return { source, secondRequest: sendSecond };
}

/** Per-stream readers over one shared stream, as seed 002's first version had them. */
class LockedReaders {
  private readonly buffers = { stdout: [] as string[], stderr: [] as string[] };
  private lock: Promise<void> = Promise.resolve();
  private readonly iterator: AsyncIterator<LogLine>;

  constructor(source: LogSource) {
    this.iterator = source[Symbol.asyncIterator]();
  }

  async read(stream: 'stdout' | 'stderr'): Promise<string | undefined> {
    for (;;) {
      // Check my buffer, then queue for the lock: the lost wakeup.
      const buffered = this.buffers[stream].shift();
      if (buffered !== undefined) return buffered;
      let release!: () => void;
      const previous = this.lock;
      this.lock = new Promise((r) => (release = r));
      await previous;
      try {
        const next = await this.iterator.next();
        if (next.done) return undefined;
        this.buffers[next.value.stream].push(next.value.data);
      } finally {
        release();
      }
    }
  }
}

/** Per-stream readers fed by the adapter's LogPump, which alone reads the stream. */
class PumpedReaders {
  private readonly buffers = { stdout: [] as string[], stderr: [] as string[] };
  private readonly waiting = { stdout: undefined as (() => void) | undefined, stderr: undefined as (() => void) | undefined };
  private ended = false;

  constructor(source: LogSource) {
    const decoder = new TextDecoder();
    const pump = new LogPump({
      open: () => source,
      deliver: (stream, data) => {
        this.buffers[stream].push(decoder.decode(data));
        this.wake(stream);
      },
      resumable: () => false,
    });
    void pump.run().finally(() => {
      this.ended = true;
      this.wake('stdout');
      this.wake('stderr');
    });
  }

  private wake(stream: 'stdout' | 'stderr'): void {
    const waiter = this.waiting[stream];
    this.waiting[stream] = undefined;
    waiter?.();
  }

  async read(stream: 'stdout' | 'stderr'): Promise<string | undefined> {
    for (;;) {
      const buffered = this.buffers[stream].shift();
      if (buffered !== undefined) return buffered;
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.waiting[stream] = resolve));
    }
  }
}

/** The client: reads stdout answers while another task drains stderr. */
async function session(readers: { read(stream: 'stdout' | 'stderr'): Promise<string | undefined> }, secondRequest: () => void) {
  const stderr: string[] = [];
  const draining = (async () => {
    for (let line = await readers.read('stderr'); line !== undefined; line = await readers.read('stderr')) stderr.push(line);
  })();
  const first = await readers.read('stdout');
  secondRequest();
  const second = await readers.read('stdout');
  return { first, second, stderr, draining };
}

describe("seed 002's shape: a reader waiting while another consumer's record arrives", () => {
  it('a lock-serialised pump deadlocks on it (the shape is reproduced)', async () => {
    const server = scriptedServer();
    const readers = new LockedReaders(server.source);
    await expect(within(1_000, session(readers, server.secondRequest), 'the MCP-shaped exchange')).rejects.toThrow(
      /did not finish/,
    );
    server.source.close();
  });

  it("the adapter's pump delivers every record as it is read: no deadlock, nothing lost", async () => {
    const server = scriptedServer();
    const readers = new PumpedReaders(server.source);
    const { first, second, stderr, draining } = await within(5_000, session(readers, server.secondRequest), 'the exchange');
    expect(first).toBe('reply 1\n');
    expect(second).toBe('reply 2\n');
    await draining;
    expect(stderr).toEqual(['server: got request 2\n']);
  });
});

/** A log source from a list of records, breaking (throwing) after `breakAfter` of them. */
function replay(records: LogLine[], breakAfter?: number): LogSource {
  async function* run(): AsyncGenerator<LogLine> {
    for (let i = 0; i < records.length; i++) {
      if (breakAfter !== undefined && i === breakAfter) throw Object.assign(new TypeError('terminated'), { cause: new Error('ECONNRESET') });
      yield records[i]!;
    }
  }
  const iterator = run();
  return Object.assign({ [Symbol.asyncIterator]: () => iterator }, { close: () => void iterator.return(undefined) });
}

describe('the log pump after a drop', () => {
  it('skips exactly what it delivered, per stream, even when the replay cuts records elsewhere', async () => {
    const opens = [
      replay(
        [
          { stream: 'stdout', data: 'ab€' },
          { stream: 'stderr', data: 'e1' },
          { stream: 'stdout', data: 'cd' },
        ],
        2,
      ),
      // The replay coalesces and splits differently.
      replay([
        { stream: 'stdout', data: 'a' },
        { stream: 'stdout', data: 'b€c' },
        { stream: 'stderr', data: 'e1e2' },
        { stream: 'stdout', data: 'd🙂' },
      ]),
    ];
    const got = { stdout: '', stderr: '' };
    const decoder = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    const pump = new LogPump({
      open: () => opens.shift()!,
      deliver: (stream, data) => (got[stream] += decoder[stream].decode(data, { stream: true })),
      resumable: () => true,
      backoffMs: () => 0,
    });
    await expect(pump.run()).resolves.toBe('ended');
    expect(got).toEqual({ stdout: 'ab€cd🙂', stderr: 'e1e2' });
    expect(pump.reopened).toBe(1);
  });

  it('gives up after repeated drops without progress, and fails on a final error', async () => {
    let opened = 0;
    const pump = new LogPump({
      open: () => {
        opened++;
        return replay([{ stream: 'stdout', data: 'x' }], 0);
      },
      deliver: () => undefined,
      resumable: () => true,
      maxAttempts: 3,
      backoffMs: () => 0,
    });
    await expect(pump.run()).rejects.toThrow(/terminated/);
    expect(opened).toBe(4);
    const final = new LogPump({
      open: () => replay([{ stream: 'stdout', data: 'x' }], 0),
      deliver: () => undefined,
      resumable: () => false,
    });
    await expect(final.run()).rejects.toThrow(/terminated/);
  });

  it('reports a replay shorter than what was delivered instead of ending quietly', async () => {
    const opens = [
      replay([{ stream: 'stdout', data: 'abc' }, { stream: 'stdout', data: 'd' }], 1),
      replay([{ stream: 'stdout', data: 'ab' }]),
    ];
    const pump = new LogPump({ open: () => opens.shift()!, deliver: () => undefined, resumable: () => true, backoffMs: () => 0 });
    await expect(pump.run()).rejects.toThrow(/shorter/);
  });
});
