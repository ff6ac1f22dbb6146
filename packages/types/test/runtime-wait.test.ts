// wait() while a loop reads [SS-WAIT-3]: the stdio MCP shape, where one
// task exchanges messages over stdin and stdout while another awaits wait()
// the whole time. The reader must get every chunk to the end; wait()
// discards only output no live iterator will read. Event-driven: every
// step waits for the driver's own report, never for a clock.
import { describe, expect, it } from 'vitest';
import { lines } from '../src/lines.js';
import type { OutputChunk } from '../src/schema/output-chunk.js';
import { flush, HIGH_WATER_MARK, scriptedSandbox, type ScriptedDriver } from './runtime-driver.js';

const decoder = new TextDecoder();

/** A line-oriented echo server: each request gets a reply on stdout, with stderr chatter around it; end of input ends it. */
function echoServer(driver: ScriptedDriver): void {
  driver.onWrite = (text) => {
    queueMicrotask(() => {
      const request = text.trim();
      driver.output('stderr', `log: got ${request}`);
      driver.output('stderr', ` (${request.length} bytes)\n`);
      // The reply split across two chunks, as a pipe may deliver it.
      driver.output('stdout', `{"reply":"${request}`);
      driver.output('stdout', `"}\n`);
      driver.output('stderr', `log: answered ${request}\n`);
    });
  };
  driver.onSignal = (signal) => queueMicrotask(() => driver.exit(null, signal));
  driver.onCloseStdin = () => {
    queueMicrotask(() => {
      driver.output('stderr', 'log: end of input\n');
      driver.exit(0);
    });
  };
}

describe('a loop that is reading while another task awaits wait() [SS-WAIT-3]', () => {
  it('gets every reply of a write, reply, write, reply exchange with stderr flowing, and wait() resolves at the end', async () => {
    const { sb, drivers } = scriptedSandbox(echoServer);
    await using proc = sb.stream(['mcp-server'], { stdin: 'pipe' });
    const replies: string[] = [];
    const logs: string[] = [];
    let loopEnded = false;
    const reading = (async () => {
      for await (const line of lines(proc)) (line.stream === 'stdout' ? replies : logs).push(line.text);
      loopEnded = true;
    })();
    // Another task awaits the result the whole time.
    let result: Awaited<ReturnType<typeof proc.wait>> | undefined;
    const waiting = proc.wait().then((value) => {
      result = value;
    });
    await flush();
    const exchanges = 20;
    for (let i = 0; i < exchanges; i++) {
      await proc.stdin!.write(`request-${i}\n`);
      await flush();
      // The reply was written by the server; the loop must have it now, not lose it nor get stuck.
      expect(replies).toEqual(Array.from({ length: i + 1 }, (_, n) => `{"reply":"request-${n}"}\n`));
      expect(loopEnded).toBe(false);
      expect(result).toBeUndefined();
    }
    await proc.stdin!.end();
    await reading;
    await waiting;
    expect(drivers[0]!.written).toHaveLength(exchanges);
    expect(logs).toHaveLength(2 * exchanges + 1);
    expect(logs.at(-1)).toBe('log: end of input\n');
    expect(result).toMatchObject({ exitCode: 0, streamed: true });
  });

  it('a reader that falls behind while wait() is pending still gets everything, in order, once it reads', async () => {
    const { sb, drivers } = scriptedSandbox();
    await using proc = sb.stream(['flood']);
    const iterator = proc[Symbol.asyncIterator]();
    const first = iterator.next(); // the loop is waiting when wait() is called
    const waiting = proc.wait();
    await flush();
    const driver = drivers[0]!;
    const sent: string[] = [];
    for (let i = 0; i < 10 * (HIGH_WATER_MARK / 8); i++) {
      const text = `c${String(i).padStart(6, '0')};`;
      sent.push(text);
      driver.output('stdout', text);
    }
    expect(driver.count('pause')).toBe(1); // behind: paused, not discarded
    driver.exit(0);
    let received = decoder.decode((await first).value!.data);
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      received += decoder.decode(next.value.data);
    }
    expect(received).toBe(sent.join(''));
    expect((await waiting).exitCode).toBe(0);
  });

  it('an iterator busy in its loop body when wait() is called keeps receiving once it asks again', async () => {
    const { sb, drivers } = scriptedSandbox();
    await using proc = sb.stream(['x']);
    const iterator = proc[Symbol.asyncIterator]();
    await flush();
    const driver = drivers[0]!;
    driver.output('stdout', 'a');
    expect(decoder.decode((await iterator.next()).value!.data)).toBe('a');
    driver.output('stdout', 'b'); // queued while the loop body runs
    const waiting = proc.wait();
    driver.output('stdout', 'c');
    const seen: string[] = [];
    const next = iterator.next();
    driver.output('stdout', 'd');
    driver.exit(0);
    seen.push(decoder.decode((await next).value!.data));
    for (let step = await iterator.next(); !step.done; step = await iterator.next()) seen.push(decoder.decode(step.value.data));
    expect(seen).toEqual(['b', 'c', 'd']);
    expect((await waiting).exitCode).toBe(0);
  });
});

describe('wait() discards only output no live iterator will read', () => {
  it('without an iterator, unread output is discarded and a paused driver resumed at once', async () => {
    const { sb, drivers } = scriptedSandbox();
    await using proc = sb.stream(['x']);
    await flush();
    drivers[0]!.output('stdout', 'x'.repeat(HIGH_WATER_MARK));
    expect(drivers[0]!.count('pause')).toBe(1);
    const waiting = proc.wait();
    expect(drivers[0]!.count('resume')).toBe(1);
    drivers[0]!.exit(0);
    expect((await waiting).exitCode).toBe(0);
    const rest: OutputChunk[] = [];
    for await (const chunk of proc) rest.push(chunk);
    expect(rest).toEqual([]);
  });

  it('an iterator left without return() does not hold wait() once a high-water mark is unread', async () => {
    const { sb, drivers } = scriptedSandbox();
    await using proc = sb.stream(['x']);
    const iterator = proc[Symbol.asyncIterator]();
    await flush();
    const driver = drivers[0]!;
    driver.output('stdout', 'first');
    await iterator.next(); // read once, then abandoned
    const waiting = proc.wait();
    driver.output('stdout', 'y'.repeat(HIGH_WATER_MARK / 2));
    expect(driver.count('pause')).toBe(0);
    driver.output('stdout', 'y'.repeat(HIGH_WATER_MARK / 2)); // a mark unread: taken as abandoned
    expect(driver.count('pause')).toBe(0);
    driver.output('stdout', 'z'.repeat(4 * HIGH_WATER_MARK));
    expect(driver.count('pause')).toBe(0);
    driver.exit(0);
    expect((await waiting).exitCode).toBe(0);
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
  });

  it('an abandoned iterator whose driver is already paused does not hold wait()', async () => {
    const { sb, drivers } = scriptedSandbox();
    await using proc = sb.stream(['x']);
    proc[Symbol.asyncIterator]();
    await flush();
    drivers[0]!.output('stdout', 'y'.repeat(HIGH_WATER_MARK));
    expect(drivers[0]!.count('pause')).toBe(1);
    const waiting = proc.wait();
    expect(drivers[0]!.count('resume')).toBe(1);
    drivers[0]!.exit(0);
    expect((await waiting).exitCode).toBe(0);
  });
});
