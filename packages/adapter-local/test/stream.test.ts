import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getEventListeners } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { AbortError, lines, type OutputChunk } from '@sandstream/types';
import {
  collect,
  eventually,
  expectValidResult,
  firstLinePid,
  isAlive,
  nodeScript,
  procState,
  readUntil,
  testSandbox,
  text,
  within,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sandstream-stream-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);
/** Writes all 256 byte values `times` times to stdout and, reversed, to stderr. */
const ALL_BYTES_SCRIPT = nodeScript(`
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const rev = Buffer.from(all).reverse();
  const times = Number(process.argv[1]);
  for (let i = 0; i < times; i++) { require('fs').writeSync(1, all); require('fs').writeSync(2, rev); }
`, '64');

function repeat(data: Uint8Array, times: number): Uint8Array {
  const out = new Uint8Array(data.byteLength * times);
  for (let i = 0; i < times; i++) out.set(data, i * data.byteLength);
  return out;
}

describe('chunks', () => {
  it('are tagged by stream, in arrival order within each stream, with nothing lost or crossed', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(
      nodeScript(`
        const fs = require('fs');
        for (let i = 0; i < 2000; i++) { fs.writeSync(1, 'out ' + i + '\\n'); fs.writeSync(2, 'err ' + i + '\\n'); }
      `),
    );
    const { chunks, stdoutText, stderrText } = await collect(proc);
    for (const chunk of chunks) {
      expect(chunk.data).toBeInstanceOf(Uint8Array);
      expect(['stdout', 'stderr']).toContain(chunk.stream);
      const body = text(chunk.data);
      if (chunk.stream === 'stdout') expect(body).not.toContain('err');
      else expect(body).not.toContain('out');
    }
    const expected = (tag: string): string => Array.from({ length: 2000 }, (_, i) => `${tag} ${i}\n`).join('');
    expect(stdoutText).toBe(expected('out'));
    expect(stderrText).toBe(expected('err'));
    const result = await proc.wait();
    expect(result.streamed).toBe(true);
    expect(result.stdout.byteLength + result.stderr.byteLength).toBe(0);
    expectValidResult(result);
  });

  it('carry all 256 byte values exactly (stream)', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(ALL_BYTES_SCRIPT);
    const { stdout, stderr } = await collect(proc);
    expect(stdout).toEqual(repeat(ALL_BYTES, 64));
    expect(stderr).toEqual(repeat(Uint8Array.from(ALL_BYTES).reverse(), 64));
  });

  it('carry all 256 byte values exactly (run)', async () => {
    const sb = testSandbox();
    const result = await sb.run(ALL_BYTES_SCRIPT);
    expect(new Uint8Array(result.stdout)).toEqual(repeat(ALL_BYTES, 64));
    expect(new Uint8Array(result.stderr)).toEqual(repeat(Uint8Array.from(ALL_BYTES).reverse(), 64));
    expectValidResult(result);
  });

  it('leave invalid UTF-8 untouched and deliver output without a final newline', async () => {
    const sb = testSandbox();
    // A lone continuation byte, an overlong encoding, a truncated sequence at the very end.
    const invalid = [0x80, 0x41, 0xc0, 0xaf, 0x42, 0xed, 0xa0, 0x80, 0x43, 0xe2, 0x82];
    const argv = nodeScript(`process.stdout.write(Buffer.from(${JSON.stringify(invalid)}))`);
    const result = await sb.run(argv);
    expect([...result.stdout]).toEqual(invalid);
    await using proc = sb.stream(argv);
    expect([...(await collect(proc)).stdout]).toEqual(invalid);
  });

  it('deliver the last bytes of a command that exits right after writing them', async () => {
    const sb = testSandbox();
    for (let i = 0; i < 5; i++) {
      await using proc = sb.stream(['printf', 'no newline at the end']);
      expect((await collect(proc)).stdoutText).toBe('no newline at the end');
    }
  });

  it('start with the stream() call, before any iteration', async () => {
    const file = join(dir, 'started');
    const sb = testSandbox();
    await using proc = sb.stream(['touch', file]);
    expect(await eventually(() => {
      try {
        readFileSync(file);
        return true;
      } catch {
        return false;
      }
    }, 10_000)).toBe(true);
    expect((await proc.wait()).exitCode).toBe(0);
  });

  it('keeps separate Processes apart when iterated concurrently', async () => {
    const sb = testSandbox();
    const procs = [1, 2, 3].map((n) => sb.stream(['sh', '-c', `for i in 1 2 3 4 5; do echo p${n}-$i; done; exit ${n}`]));
    try {
      const outputs = await Promise.all(procs.map((p) => collect(p)));
      outputs.forEach((o, i) => expect(o.stdoutText).toBe([1, 2, 3, 4, 5].map((j) => `p${i + 1}-${j}\n`).join('')));
      expect((await Promise.all(procs.map((p) => p.wait()))).map((r) => r.exitCode)).toEqual([1, 2, 3]);
    } finally {
      await Promise.all(procs.map((p) => p[Symbol.asyncDispose]()));
    }
  });
});

describe('backpressure', () => {
  it('pauses the pipes at the high-water mark while nobody reads, then delivers every byte', async () => {
    const counter = join(dir, 'produced');
    const total = 64 * 1024 * 1024;
    const sb = testSandbox();
    // Writes 64 KiB blocks, recording how much it wrote after each one.
    await using proc = sb.stream(
      nodeScript(
        `
        const fs = require('fs');
        const block = Buffer.alloc(65536, 120);
        let written = 0;
        while (written < ${total}) { fs.writeSync(1, block); written += block.length; fs.writeFileSync(process.argv[1], String(written)); }
      `,
        counter,
      ),
    );
    const produced = (): number => {
      try {
        return Number(readFileSync(counter, 'utf8')) || 0;
      } catch {
        return 0;
      }
    };
    // Let it run without reading until its progress stalls.
    await eventually(() => produced() >= 4 * 1024 * 1024, 20_000);
    let last = -1;
    await eventually(() => {
      const now = produced();
      const stalled = now === last;
      last = now;
      return stalled;
    }, 20_000, 300);
    // Blocked on a full pipe, far from done: memory stays bounded.
    expect(produced()).toBeLessThan(16 * 1024 * 1024);
    expect(proc.exited).toBe(false);
    expect(['S', 'D']).toContain(procState(proc.pid!));

    let received = 0;
    for await (const chunk of proc) received += chunk.data.byteLength;
    expect(received).toBe(total);
    expect((await proc.wait()).exitCode).toBe(0);
  });

  it('resumes a paused producer when wait() discards the rest', async () => {
    const sb = testSandbox();
    const total = 50 * 1024 * 1024;
    await using proc = sb.stream(['head', '-c', String(total), '/dev/zero']);
    // What the producer wrote so far, as the kernel counts it.
    const written = (): number => {
      try {
        return Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${proc.pid}/io`, 'utf8'))?.[1] ?? 0);
      } catch {
        return 0;
      }
    };
    // Nobody reads: wait until the producer is paused, blocked on a full pipe far from done (its
    // count stalls), so that wait() has a paused producer to resume rather than a finished one.
    let last = -1;
    const stalled = await eventually(() => {
      const now = written();
      const still = now > 0 && now === last;
      last = now;
      return still;
    }, 20_000, 300);
    expect(stalled, 'the producer never stalled on a full pipe').toBe(true);
    expect(written()).toBeLessThan(total);
    expect(proc.exited).toBe(false);
    const result = await within(20_000, proc.wait(), 'wait()');
    expect(result.exitCode).toBe(0);
  });
  it('keeps memory bounded while tearing down a flooding command that ignores SIGTERM', async () => {
    const sb = testSandbox({ graceMs: 1_000 });
    await using proc = sb.stream(['sh', '-c', 'trap "" TERM; exec yes'], { timeout: 300 });
    // Nobody reads: the timeout fires, SIGTERM is ignored, SIGKILL follows the grace period.
    expect(await eventually(() => proc.pid !== undefined && !isAlive(proc.pid), 20_000)).toBe(true);
    let received = 0;
    for await (const chunk of proc) received += chunk.data.byteLength;
    // Without a bound during teardown, this was hundreds of MiB per second of grace.
    expect(received).toBeLessThan(32 * 1024 * 1024);
    const result = await proc.wait();
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe('SIGKILL');
  });
});

describe('timeout and abort', () => {
  it('timeout ends the command, keeps the output before it, and sets timedOut', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'echo partial; echo partial-err >&2; exec sleep 1000'], { timeout: 1_000 });
    const { stdoutText, stderrText } = await within(10_000, collect(proc), 'iteration');
    expect(stdoutText).toBe('partial\n');
    expect(stderrText).toBe('partial-err\n');
    const result = await proc.wait();
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe('SIGTERM');
    expect(result.streamed).toBe(true);
    expectValidResult(result);
  });

  it('abort ends the command and rejects iteration and wait() with AbortError', async () => {
    const sb = testSandbox();
    const controller = new AbortController();
    await using proc = sb.stream(['sh', '-c', 'echo $$; exec sleep 1000'], { signal: controller.signal });
    const { pid, iterator } = await firstLinePid(proc);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    const error = await iterator.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortError);
    expect((error as AbortError).name).toBe('AbortError');
    expect((error as AbortError).cause).toBe(reason);
    expect((error as AbortError).result?.streamed).toBe(true);
    expect((error as AbortError).result?.signal).toBe('SIGTERM');
    expect(isAlive(pid)).toBe(false);
    await expect(proc.wait()).rejects.toBeInstanceOf(AbortError);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('delivers what the command writes after the abort, then ends the loop with AbortError', async () => {
    const sb = testSandbox({ graceMs: 5_000 });
    const controller = new AbortController();
    await using proc = sb.stream(['sh', '-c', 'trap "echo bye; exit 5" TERM; while :; do echo data; done'], {
      signal: controller.signal,
    });
    let tail = '';
    const error = await (async () => {
      for await (const chunk of proc) {
        tail = (tail + text(chunk.data)).slice(-100);
        if (!controller.signal.aborted) controller.abort();
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortError);
    expect(tail.endsWith('bye\n')).toBe(true);
    expect((error as AbortError).result?.exitCode).toBe(5);
  });

  it('abort while the loop awaits a chunk rejects that pending next()', async () => {
    const sb = testSandbox();
    const controller = new AbortController();
    await using proc = sb.stream(['sleep', '1000'], { signal: controller.signal });
    const pending = proc[Symbol.asyncIterator]().next();
    setTimeout(() => controller.abort(), 50);
    await expect(within(10_000, pending, 'next()')).rejects.toBeInstanceOf(AbortError);
  });

  it('an already-aborted signal starts nothing', async () => {
    const file = join(dir, 'must-not-exist');
    const sb = testSandbox();
    const signal = AbortSignal.abort();
    await using proc = sb.stream(['touch', file], { signal });
    await expect(collect(proc)).rejects.toBeInstanceOf(AbortError);
    await expect(proc.wait()).rejects.toBeInstanceOf(AbortError);
    expect(proc.pid).toBeUndefined();
    await expect(sb.run(['touch', file], { signal })).rejects.toBeInstanceOf(AbortError);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(() => readFileSync(file)).toThrow();
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('removes its abort listener once the command ends normally', async () => {
    const sb = testSandbox();
    const controller = new AbortController();
    await using proc = sb.stream(['echo', 'hi'], { signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    await collect(proc);
    await proc.wait();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    // One signal shared by many commands does not accumulate listeners.
    for (let i = 0; i < 5; i++) await sb.run(['true'], { signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('lines()', () => {
  async function* chunksOf(...parts: Array<[OutputChunk['stream'], number[] | string]>): AsyncGenerator<OutputChunk> {
    for (const [stream, data] of parts) {
      yield { stream, data: typeof data === 'string' ? new TextEncoder().encode(data) : Uint8Array.from(data) };
    }
  }

  async function all(source: AsyncIterable<OutputChunk>): Promise<Array<[string, string]>> {
    const out: Array<[string, string]> = [];
    for await (const line of lines(source)) out.push([line.stream, line.text]);
    return out;
  }

  it('splits per stream, keeps the newline and flushes the final partial line', async () => {
    expect(
      await all(
        chunksOf(['stdout', 'a1\na'], ['stderr', 'e1\ne'], ['stdout', '2\n'], ['stderr', '2'], ['stdout', 'tail']),
      ),
    ).toEqual([
      ['stdout', 'a1\n'],
      ['stderr', 'e1\n'],
      ['stdout', 'a2\n'],
      ['stdout', 'tail'],
      ['stderr', 'e2'],
    ]);
  });

  it('decodes UTF-8 split across chunk boundaries, per stream', async () => {
    // '€' is e2 82 ac; '🦀' is f0 9f a6 80. Interleave the halves of both streams.
    expect(
      await all(
        chunksOf(
          ['stdout', [0x78, 0xe2]],
          ['stderr', [0xf0, 0x9f]],
          ['stdout', [0x82]],
          ['stderr', [0xa6, 0x80, 0x0a]],
          ['stdout', [0xac, 0x0a]],
        ),
      ),
    ).toEqual([
      ['stderr', '🦀\n'],
      ['stdout', 'x€\n'],
    ]);
  });

  it('handles empty lines, CRLF and a long line built from many chunks', async () => {
    const long = 'x'.repeat(200_000);
    const parts: Array<[OutputChunk['stream'], string]> = [['stdout', '\n\r\n']];
    for (let i = 0; i < long.length; i += 1000) parts.push(['stdout', long.slice(i, i + 1000)]);
    parts.push(['stdout', '\nend']);
    expect(await all(chunksOf(...parts))).toEqual([
      ['stdout', '\n'],
      ['stdout', '\r\n'],
      ['stdout', `${long}\n`],
      ['stdout', 'end'],
    ]);
  });

  it('yields nothing for no output', async () => {
    expect(await all(chunksOf())).toEqual([]);
  });

  it('works over a real Process, and breaking out terminates the command', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'echo $$; printf "a\\nb\\n"; printf "e\\n" >&2; printf "c"']);
    const seen: Array<[string, string]> = [];
    for await (const line of lines(proc)) seen.push([line.stream, line.text]);
    expect(seen.filter(([s]) => s === 'stdout').map(([, t]) => t).slice(1)).toEqual(['a\n', 'b\n', 'c']);
    expect(seen.filter(([s]) => s === 'stderr')).toEqual([['stderr', 'e\n']]);

    const endless = sb.stream(['sh', '-c', 'echo $$; exec yes line']);
    let pid = 0;
    for await (const line of lines(endless)) {
      if (pid === 0) pid = Number(line.text);
      else break;
    }
    expect(endless.exited).toBe(true);
    expect(isAlive(pid)).toBe(false);
  });

  it('passes a throw inside the loop on to the Process', async () => {
    const sb = testSandbox();
    const proc = sb.stream(['sh', '-c', 'echo $$; exec sleep 1000']);
    let pid = 0;
    await expect(
      (async () => {
        for await (const line of lines(proc)) {
          pid = Number(line.text);
          throw new Error('stop');
        }
      })(),
    ).rejects.toThrow('stop');
    expect(proc.exited).toBe(true);
    expect(isAlive(pid)).toBe(false);
  });
});

describe('iteration details', () => {
  it('rejects overlapping next() calls instead of losing a chunk', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sleep', '1000']);
    const iterator = proc[Symbol.asyncIterator]();
    const first = iterator.next();
    await expect(iterator.next()).rejects.toBeInstanceOf(TypeError);
    await proc[Symbol.asyncDispose]();
    await expect(first).resolves.toEqual({ value: undefined, done: true });
  });

  it('ends the loop normally when the command exits', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'echo one; exit 3']);
    const iterator = proc[Symbol.asyncIterator]();
    const first = await readUntil(iterator, (s) => s.includes('\n'));
    expect(first).toBe('one\n');
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
    expect((await proc.wait()).exitCode).toBe(3);
  });
});
