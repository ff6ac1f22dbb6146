// wait() on the local adapter: idempotent, draining unread output larger
// than the pipe buffer (after partial iteration too), and the Process's one
// iteration and its not being thenable.
import { describe, expect, it } from 'vitest';
import { collect, testSandbox, within } from './helpers.js';

describe('wait()', () => {
  it('is idempotent and drains unread output larger than the pipe buffer', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['head', '-c', '20000000', '/dev/zero']);
    const first = await within(10_000, proc.wait(), 'wait()');
    const second = await proc.wait();
    expect(first.exitCode).toBe(0);
    expect(first.streamed).toBe(true);
    expect(first.stdout.byteLength).toBe(0);
    expect(second).toEqual(first);
    expect(await proc.wait()).toBe(first);
  });

  it('drains output after partial iteration', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'head -c 5000000 /dev/zero; head -c 5000000 /dev/zero >&2; echo done']);
    const iterator = proc[Symbol.asyncIterator]();
    await iterator.next();
    const result = await within(10_000, proc.wait(), 'wait()');
    expect(result.exitCode).toBe(0);
    // The iterator is finished too.
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
  });

  it('a second iteration raises InvalidState', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['true']);
    await collect(proc);
    expect(() => proc[Symbol.asyncIterator]()).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
  });

  it('is not thenable', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['true']);
    expect('then' in proc).toBe(false);
    expect(String(proc)).toBe('[object Process]');
  });
});
