// The shared Process runtime (`@sandstream/types/runtime`) against a scripted
// in-memory driver: the semantics every adapter built on defineSandbox() gets.
// This file: starting, iterating, wait(), backpressure and concurrent commands.
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidState, SpawnFailed } from '../src/errors.js';
import type { OutputChunk, StreamName } from '../src/schema/output-chunk.js';
import { encodeExecResult, validatorFor } from '../src/validators.js';
import type { Process } from '../src/contract.js';
import { HIGH_WATER_MARK, fakeSandbox, resetFakes, settle } from './runtime-fake-sandbox.js';

const decoder = new TextDecoder();

function text(chunks: readonly OutputChunk[], stream: StreamName): string {
  return chunks
    .filter((chunk) => chunk.stream === stream)
    .map((chunk) => decoder.decode(chunk.data))
    .join('');
}

afterEach(resetFakes);

describe('stream() [SS-STREAM-1, SS-START-1]', () => {
  it('returns a non-thenable Process synchronously, the start already requested', () => {
    const { sb, drivers } = fakeSandbox();
    const proc = sb.stream(['server']);
    expect(drivers).toHaveLength(1);
    expect(drivers[0]!.started).toBe(1);
    expect('then' in proc).toBe(false);
    expect(proc.argv).toEqual(['server']);
    expect(proc.exited).toBe(false);
  });

  it('reports the pid once the start is confirmed', async () => {
    const { sb } = fakeSandbox();
    const proc = sb.stream(['server']);
    await settle();
    expect(proc.pid).toBe(4242);
  });

  it('rejects iteration, wait() and run() with SpawnFailed when the start fails', async () => {
    const { sb } = fakeSandbox({ spawnError: true });
    const proc = sb.stream(['nope']);
    await expect(proc.wait()).rejects.toBeInstanceOf(SpawnFailed);
    await expect(
      (async () => {
        for await (const _ of proc) void _;
      })(),
    ).rejects.toBeInstanceOf(SpawnFailed);
    await expect(sb.run(['nope'])).rejects.toBeInstanceOf(SpawnFailed);
    await proc[Symbol.asyncDispose]();
  });
});

describe('iteration [SS-STREAM-2, SS-ORDER-1, SS-ORDER-2]', () => {
  it('delivers tagged chunks in order and ends when the command exits', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cmd']);
    const driver = drivers[0]!;
    await settle();
    driver.output('stdout', 'one ');
    driver.output('stderr', 'warn\n');
    driver.output('stdout', 'two\n');
    driver.exit(0);
    const chunks: OutputChunk[] = [];
    for await (const chunk of proc) chunks.push(chunk);
    expect(text(chunks, 'stdout')).toBe('one two\n');
    expect(text(chunks, 'stderr')).toBe('warn\n');
    expect(chunks.map((chunk) => chunk.stream)).toEqual(['stdout', 'stderr', 'stdout']);
    const result = await proc.wait();
    expect(result).toMatchObject({ exitCode: 0, signal: null, streamed: true, timedOut: false });
    expect(result.stdout.byteLength + result.stderr.byteLength).toBe(0);
    expect(validatorFor('ExecResult')(encodeExecResult(result))).toBe(true);
  });

  it('can be iterated only once', async () => {
    const { sb } = fakeSandbox();
    await using proc = sb.stream(['cmd']);
    proc[Symbol.asyncIterator]();
    expect(() => proc[Symbol.asyncIterator]()).toThrow(InvalidState);
  });
});

describe('wait() [SS-WAIT-1, SS-WAIT-2]', () => {
  it('drains and discards unread output, resumes a paused driver, and is idempotent', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cmd']);
    const driver = drivers[0]!;
    await settle();
    driver.output('stdout', 'x'.repeat(HIGH_WATER_MARK)); // nobody reads: the driver is paused
    expect(driver.pauses).toBe(1);
    const waiting = proc.wait();
    expect(driver.resumes).toBe(1);
    driver.output('stdout', 'more');
    driver.exit(3);
    const first = await waiting;
    expect(first).toMatchObject({ exitCode: 3, streamed: true });
    expect(await proc.wait()).toBe(first);
    const rest: OutputChunk[] = [];
    for await (const chunk of proc) rest.push(chunk);
    expect(rest).toEqual([]);
  });

  it('does not terminate the command', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cmd']);
    const waiting = proc.wait();
    await settle();
    expect(drivers[0]!.signals).toEqual([]);
    drivers[0]!.exit(0);
    await waiting;
  });
});

describe('backpressure', () => {
  it('pauses the driver at the high-water mark and resumes once the reader caught up', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['yes']);
    const driver = drivers[0]!;
    await settle();
    for (let i = 0; i < 4; i++) driver.output('stdout', 'yyyy');
    expect(driver.pauses).toBe(1);
    const iterator = proc[Symbol.asyncIterator]();
    await iterator.next(); // 12 bytes left: above half the mark
    expect(driver.resumes).toBe(0);
    await iterator.next(); // 8 bytes left: half the mark
    expect(driver.resumes).toBe(1);
    driver.output('stdout', 'yyyy');
    expect(driver.pauses).toBe(1);
  });
});

describe('concurrency [SS-CONC-1]', () => {
  it('keeps the chunks and results of concurrent processes apart', async () => {
    const { sb, drivers } = fakeSandbox();
    await using a = sb.stream(['a']);
    await using b = sb.stream(['b']);
    await settle();
    drivers[0]!.output('stdout', 'from a');
    drivers[1]!.output('stdout', 'from b');
    drivers[1]!.exit(2);
    drivers[0]!.exit(1);
    const read = async (proc: Process): Promise<string> => {
      let out = '';
      for await (const chunk of proc) out += decoder.decode(chunk.data);
      return out;
    };
    expect(await Promise.all([read(a), read(b)])).toEqual(['from a', 'from b']);
    expect((await a.wait()).exitCode).toBe(1);
    expect((await b.wait()).exitCode).toBe(2);
  });
});
