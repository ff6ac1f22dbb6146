import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AbortError, CapabilityNotSupported, InvalidArgument, StdinClosed } from '@sandstream/types';
import { collect, firstLinePid, isAlive, readUntil, testSandbox, text, within } from './helpers.js';

const sha = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** Fails the test on any uncaught exception or unhandled rejection (EPIPE, ECONNRESET...). */
let escaped: unknown[] = [];
const onEscape = (error: unknown): void => {
  escaped.push(error);
};
beforeEach(() => {
  escaped = [];
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
});
afterEach(async () => {
  // Give late errors a chance to surface.
  await new Promise((resolve) => setTimeout(resolve, 50));
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
  expect(escaped).toEqual([]);
});

describe('stdin writer', () => {
  it('delivers writes in call order and end() gives end-of-file', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    const stdin = proc.stdin!;
    expect(stdin.closed).toBe(false);
    await stdin.write('one ');
    await stdin.write(new TextEncoder().encode('two '));
    await stdin.write('three');
    await stdin.end();
    expect(stdin.closed).toBe(true);
    const { stdoutText } = await within(10_000, collect(proc), 'iteration');
    expect(stdoutText).toBe('one two three');
    expect((await proc.wait()).exitCode).toBe(0);
  });

  it('keeps call order for writes that were not awaited one by one', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    const writes = Array.from({ length: 500 }, (_, i) => proc.stdin!.write(`${i},`));
    const ended = proc.stdin!.end();
    const { stdoutText } = await collect(proc);
    await Promise.all([...writes, ended]);
    expect(stdoutText).toBe(Array.from({ length: 500 }, (_, i) => `${i},`).join(''));
  });

  it('carries several MiB through cat byte-exact while output is read', async () => {
    const sb = testSandbox();
    const input = randomBytes(8 * 1024 * 1024);
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    const reading = collect(proc);
    for (let offset = 0; offset < input.length; offset += 1024 * 1024) {
      await proc.stdin!.write(input.subarray(offset, offset + 1024 * 1024));
    }
    await proc.stdin!.end();
    const { stdout } = await within(30_000, reading, 'iteration');
    expect(stdout.byteLength).toBe(input.byteLength);
    expect(sha(stdout)).toBe(sha(input));
  });

  it('supports a request/response conversation', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'while read line; do echo "got $line"; done'], { stdin: 'pipe' });
    const iterator = proc[Symbol.asyncIterator]();
    for (const word of ['alpha', 'beta', 'gamma']) {
      await proc.stdin!.write(`${word}\n`);
      expect(await readUntil(iterator, (s) => s.endsWith('\n'))).toBe(`got ${word}\n`);
    }
    await proc.stdin!.end();
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
  });

  it('rejects write() after end() with StdinClosed; end() is idempotent', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    await proc.stdin!.end();
    await expect(proc.stdin!.write('late')).rejects.toBeInstanceOf(StdinClosed);
    await expect(proc.stdin!.end()).resolves.toBeUndefined();
    await collect(proc);
  });

  it('rejects write() after the command exited with StdinClosed, never an uncaught EPIPE', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['true'], { stdin: 'pipe' });
    await proc.wait();
    await expect(proc.stdin!.write('late')).rejects.toBeInstanceOf(StdinClosed);
    await expect(proc.stdin!.write(randomBytes(1024 * 1024))).rejects.toBeInstanceOf(StdinClosed);
    await expect(proc.stdin!.end()).resolves.toBeUndefined();
    expect(proc.stdin!.closed).toBe(true);
  });

  it('rejects a write to a command that closed its standard input with StdinClosed', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'exec 0<&-; echo closed; exec sleep 1000'], { stdin: 'pipe' });
    await readUntil(proc[Symbol.asyncIterator](), (s) => s.includes('closed'));
    const error = await proc.stdin!.write(randomBytes(256 * 1024)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StdinClosed);
    expect(proc.stdin!.closed).toBe(true);
    await expect(proc.stdin!.write('again')).rejects.toBeInstanceOf(StdinClosed);
    await expect(proc.stdin!.end()).resolves.toBeUndefined();
  });

  it('rejects a large write in flight when the command exits without reading it', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['head', '-c', '10'], { stdin: 'pipe' });
    const results = await Promise.allSettled([
      proc.stdin!.write(randomBytes(8 * 1024 * 1024)),
      proc.stdin!.write('more'),
    ]);
    for (const result of results) {
      if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(StdinClosed);
    }
    expect(results[0]!.status).toBe('rejected');
    await expect(proc.stdin!.end()).resolves.toBeUndefined();
    expect((await collect(proc)).stdout.byteLength).toBe(10);
  });

  it('rejects a write of the wrong type with InvalidArgument', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    await expect(proc.stdin!.write(42 as never)).rejects.toBeInstanceOf(InvalidArgument);
    await proc.stdin!.end();
  });

  it('gives no writer and an empty standard input by default', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['cat']);
    expect(proc.stdin).toBeNull();
    expect((await within(10_000, collect(proc), 'cat')).stdoutText).toBe('');
    expect((await sb.run(['cat'])).stdoutText).toBe('');
  });

  it('terminates a command waiting on stdin when disposed without end()', async () => {
    const sb = testSandbox();
    const proc = sb.stream(['sh', '-c', 'echo $$; exec cat'], { stdin: 'pipe' });
    const { pid } = await firstLinePid(proc);
    await proc.stdin!.write('pending');
    await proc[Symbol.asyncDispose]();
    expect(isAlive(pid)).toBe(false);
    await expect(proc.stdin!.write('late')).rejects.toBeInstanceOf(StdinClosed);
  });

  it('is refused when the stdin capability is off', async () => {
    const sb = testSandbox({ capabilities: { stdin: false } });
    expect(() => sb.stream(['cat'], { stdin: 'pipe' })).toThrow(CapabilityNotSupported);
    await expect(sb.run(['cat'], { input: 'x' })).rejects.toBeInstanceOf(CapabilityNotSupported);
  });

  it('cannot be combined with one-shot input', () => {
    const sb = testSandbox();
    expect(() => sb.stream(['cat'], { stdin: 'pipe', input: 'x' })).toThrow(InvalidArgument);
  });
});

describe('one-shot input', () => {
  it('run() delivers the bytes, then end-of-file', async () => {
    const sb = testSandbox();
    const result = await sb.run(['cat'], { input: 'hello\nworld' });
    expect(result.stdoutText).toBe('hello\nworld');
    expect(result.exitCode).toBe(0);
  });

  it('run() carries several MiB of binary input byte-exact', async () => {
    const sb = testSandbox();
    const input = randomBytes(6 * 1024 * 1024);
    const result = await within(30_000, sb.run(['cat'], { input }), 'run()');
    expect(sha(result.stdout)).toBe(sha(input));
  });

  it('stream() with input feeds the command and gives no writer', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['wc', '-c'], { input: 'abcdef' });
    expect(proc.stdin).toBeNull();
    expect(text((await collect(proc)).stdout).trim()).toBe('6');
  });

  it('is not an error when the command exits without reading it all', async () => {
    const sb = testSandbox();
    const result = await sb.run(['head', '-c', '3'], { input: randomBytes(8 * 1024 * 1024) });
    expect(result.exitCode).toBe(0);
    expect(result.stdout.byteLength).toBe(3);
    expect((await sb.run(['true'], { input: randomBytes(4 * 1024 * 1024) })).exitCode).toBe(0);
  });

  it('does not stop a timeout from ending a command that never reads it', async () => {
    const sb = testSandbox();
    const result = await within(
      10_000,
      sb.run(['sh', '-c', 'echo waiting; exec sleep 1000'], { input: randomBytes(8 * 1024 * 1024), timeout: 1_000 }),
      'run()',
    );
    expect(result.timedOut).toBe(true);
    expect(result.stdoutText).toBe('waiting\n');
  });

  it('does not stop an abort, a kill or disposal from ending a command that never reads it', async () => {
    const sb = testSandbox();
    const controller = new AbortController();
    const running = sb.run(['sleep', '1000'], { input: randomBytes(8 * 1024 * 1024), signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    await expect(within(10_000, running, 'run()')).rejects.toBeInstanceOf(AbortError);

    const proc = sb.stream(['sh', '-c', 'echo $$; exec sleep 1000'], { input: randomBytes(8 * 1024 * 1024) });
    const { pid } = await firstLinePid(proc);
    expect(proc.pid).toBe(pid);
    await within(10_000, proc.kill('SIGKILL'), 'kill()');
    expect((await within(10_000, proc.wait(), 'wait()')).signal).toBe('SIGKILL');

    const other = sb.stream(['sh', '-c', 'echo $$; exec sleep 1000'], { input: randomBytes(8 * 1024 * 1024) });
    const second = await firstLinePid(other);
    await within(10_000, other[Symbol.asyncDispose](), 'disposal');
    expect(isAlive(second.pid)).toBe(false);
  });
});
