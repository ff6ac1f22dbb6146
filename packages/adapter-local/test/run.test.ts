import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { getEventListeners } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AbortError, CallbackFailed, InvalidArgument, type OutputChunk } from '@sandstream/types';
import { concat, expectValidResult, nodeScript, testSandbox, text, within } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sandstream-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('run()', () => {
  it('buffers stdout and stderr and reports the exit code', async () => {
    const sb = testSandbox();
    const result = await sb.run(['sh', '-c', 'echo out; echo err >&2; exit 3']);
    expect(result.exitCode).toBe(3);
    expect(result.signal).toBeNull();
    expect(result.stdoutText).toBe('out\n');
    expect(result.stderrText).toBe('err\n');
    expect(result.streamed).toBe(false);
    expect(result.timedOut).toBe(false);
    expect(result.stdoutTruncated).toBe(false);
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(Object.isFrozen(result)).toBe(true);
    expectValidResult(result);
  });

  it('reports death by a signal with a null exit code', async () => {
    const sb = testSandbox();
    const result = await sb.run(['sh', '-c', 'kill -USR1 $$']);
    expect(result.exitCode).toBeNull();
    expect(result.signal).toBe('SIGUSR1');
    expectValidResult(result);
  });

  it('reports exit codes 0 to 255', async () => {
    const sb = testSandbox();
    for (const code of [0, 1, 127, 255]) {
      expect((await sb.run(['sh', '-c', `exit ${code}`])).exitCode).toBe(code);
    }
  });

  it('keeps at most maxOutputBytes per stream and keeps draining past the cap', async () => {
    const sb = testSandbox();
    const result = await within(20_000, sb.run(['head', '-c', '10000000', '/dev/zero'], { maxOutputBytes: 1024 }), 'run()');
    expect(result.exitCode).toBe(0);
    expect(result.stdout.byteLength).toBe(1024);
    expect(result.stdoutTruncated).toBe(true);
    expect(result.stderrTruncated).toBe(false);
    expectValidResult(result);
  });

  it('sets the truncation flag of each stream separately', async () => {
    const sb = testSandbox();
    const result = await sb.run(['sh', '-c', 'head -c 5000 /dev/zero >&2; printf abc'], { maxOutputBytes: 1024 });
    expect(result.stderr.byteLength).toBe(1024);
    expect(result.stderrTruncated).toBe(true);
    expect(result.stdoutText).toBe('abc');
    expect(result.stdoutTruncated).toBe(false);
  });

  it('is not truncated at exactly the cap, and keeps nothing with a cap of 0', async () => {
    const sb = testSandbox();
    const exact = await sb.run(['head', '-c', '1024', '/dev/zero'], { maxOutputBytes: 1024 });
    expect(exact.stdout.byteLength).toBe(1024);
    expect(exact.stdoutTruncated).toBe(false);
    const none = await sb.run(['echo', 'x'], { maxOutputBytes: 0 });
    expect(none.stdout.byteLength).toBe(0);
    expect(none.stdoutTruncated).toBe(true);
    const silent = await sb.run(['true'], { maxOutputBytes: 0 });
    expect(silent.stdoutTruncated).toBe(false);
  });

  it('keeps the first bytes when truncating', async () => {
    const sb = testSandbox();
    const result = await sb.run(['sh', '-c', 'printf 0123456789; sleep 0.05; printf abcdefghij'], { maxOutputBytes: 15 });
    expect(result.stdoutText).toBe('0123456789abcde');
  });

  it('returns output as plain Uint8Arrays owning exactly their bytes', async () => {
    const sb = testSandbox();
    const cases = [
      sb.run(['printf', 'ab']),
      // Two small chunks: joined in memory of their own, not in Node's shared Buffer pool.
      sb.run(['sh', '-c', 'printf a; sleep 0.05; printf b; printf c >&2; sleep 0.05; printf d >&2']),
      // Cut inside one large chunk: the rest of that chunk is not kept alive.
      sb.run(['head', '-c', '100000', '/dev/zero'], { maxOutputBytes: 1000 }),
    ];
    for (const result of await Promise.all(cases)) {
      for (const data of [result.stdout, result.stderr]) {
        expect(data.constructor).toBe(Uint8Array);
        expect(data.byteOffset).toBe(0);
        expect(data.buffer.byteLength).toBe(data.byteLength);
      }
    }
    expect(text((await cases[1]!).stdout)).toBe('ab');
  });

  it('loses no output at the end of a command, even with a grace period of 0', async () => {
    const sb = testSandbox({ graceMs: 0 });
    for (let i = 0; i < 3; i++) {
      const plain = await sb.run(['head', '-c', '5000000', '/dev/zero']);
      expect(plain.stdout.byteLength).toBe(5_000_000);
      const withMember = await sb.run(['sh', '-c', 'sleep 1000 & head -c 3000000 /dev/zero; printf end']);
      expect(withMember.stdout.byteLength).toBe(3_000_003);
      expect(text(withMember.stdout.subarray(-3))).toBe('end');
    }
  });

  it('rejects an invalid maxOutputBytes or onOutput', async () => {
    const sb = testSandbox();
    await expect(sb.run(['true'], { maxOutputBytes: -1 })).rejects.toBeInstanceOf(InvalidArgument);
    await expect(sb.run(['true'], { onOutput: 'log' as never })).rejects.toMatchObject({ key: 'options.onOutput' });
  });
});

describe('onOutput', () => {
  it('receives every chunk in arrival order, past the cap too', async () => {
    const sb = testSandbox();
    const chunks: OutputChunk[] = [];
    const result = await sb.run(['head', '-c', '10000000', '/dev/zero'], {
      maxOutputBytes: 1024,
      onOutput: (chunk) => chunks.push(chunk),
    });
    expect(result.exitCode).toBe(0);
    expect(chunks.reduce((n, c) => n + c.data.byteLength, 0)).toBe(10_000_000);
    expect(chunks.every((c) => c.stream === 'stdout')).toBe(true);
  });

  it('sees the same bytes run() keeps, per stream', async () => {
    const sb = testSandbox();
    const chunks: OutputChunk[] = [];
    const result = await sb.run(
      nodeScript(`const fs = require('fs'); for (let i = 0; i < 500; i++) { fs.writeSync(1, 'o' + i + ' '); fs.writeSync(2, 'e' + i + ' '); }`),
      { onOutput: (chunk) => chunks.push(chunk) },
    );
    const out = concat(chunks.filter((c) => c.stream === 'stdout').map((c) => c.data));
    const err = concat(chunks.filter((c) => c.stream === 'stderr').map((c) => c.data));
    expect(text(out)).toBe(result.stdoutText);
    expect(text(err)).toBe(result.stderrText);
    expect(result.stdoutText).toBe(Array.from({ length: 500 }, (_, i) => `o${i} `).join(''));
  });

  it('is called live, while the command still runs', async () => {
    const sb = testSandbox();
    const flag = join(dir, 'first-seen');
    const result = await sb.run(
      ['sh', '-c', 'echo first; while [ ! -e "$1" ]; do sleep 0.02; done; echo second', 'sh', flag],
      {
        timeout: 20_000,
        onOutput: (chunk) => {
          if (text(chunk.data).includes('first')) writeFileSync(flag, '');
        },
      },
    );
    expect(result.timedOut).toBe(false);
    expect(result.stdoutText).toBe('first\nsecond\n');
  });

  it('terminates the command and rejects with CallbackFailed when it throws', async () => {
    const sb = testSandbox();
    const thrown = new Error('callback bug');
    let calls = 0;
    const error = await within(
      10_000,
      sb
        .run(['sh', '-c', 'echo $$; exec yes'], {
          onOutput: () => {
            calls++;
            throw thrown;
          },
        })
        .catch((e: unknown) => e),
      'run()',
    );
    expect(error).toBeInstanceOf(CallbackFailed);
    expect((error as CallbackFailed).cause).toBe(thrown);
    expect((error as CallbackFailed).code).toBe('CALLBACK_FAILED');
    const result = (error as CallbackFailed).result!;
    expect(result.signal).toBe('SIGTERM');
    expect(result.stdout.byteLength).toBeGreaterThan(0);
    // Not called again after it threw.
    expect(calls).toBe(1);
  });
});

describe('timeout', () => {
  it('terminates the command, keeps the partial output and sets timedOut', async () => {
    const sb = testSandbox();
    const result = await within(
      10_000,
      sb.run(['sh', '-c', 'echo partial; echo partial-err >&2; exec sleep 1000'], { timeout: 1_000 }),
      'run()',
    );
    expect(result.timedOut).toBe(true);
    expect(result.stdoutText).toBe('partial\n');
    expect(result.stderrText).toBe('partial-err\n');
    expect(result.signal).toBe('SIGTERM');
    expect(result.exitCode).toBeNull();
    expectValidResult(result);
  });

  it('escalates to SIGKILL when the command ignores SIGTERM', async () => {
    const sb = testSandbox();
    const result = await within(10_000, sb.run(['sh', '-c', 'trap "" TERM; echo hi; exec sleep 1000'], { timeout: 500 }), 'run()');
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe('SIGKILL');
    expect(result.stdoutText).toBe('hi\n');
  });

  it('does not fire for a command that finishes in time', async () => {
    const sb = testSandbox();
    const result = await sb.run(['echo', 'quick'], { timeout: 20_000 });
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(0);
  });

  it('honours timeouts longer than setTimeout can hold (2^31 ms and up)', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      const sb = testSandbox();
      const result = await sb.run(['sleep', '0.3'], { timeout: 2 ** 31 + 1_000 });
      expect(result.timedOut).toBe(false);
      expect(result.exitCode).toBe(0);
      await using proc = sb.stream(['sleep', '0.3'], { timeout: 2 ** 33 });
      expect((await proc.wait()).timedOut).toBe(false);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain('TimeoutOverflowWarning');
  });

  it('rejects a non-positive timeout', async () => {
    const sb = testSandbox();
    await expect(sb.run(['true'], { timeout: 0 })).rejects.toMatchObject({ key: 'options.timeout' });
  });
});

describe('abort', () => {
  it('terminates the command and rejects with AbortError carrying the partial output', async () => {
    const sb = testSandbox();
    const controller = new AbortController();
    const error = await within(
      10_000,
      sb
        .run(['sh', '-c', 'echo partial; exec sleep 1000'], {
          signal: controller.signal,
          onOutput: () => controller.abort('enough'),
        })
        .catch((e: unknown) => e),
      'run()',
    );
    expect(error).toBeInstanceOf(AbortError);
    expect((error as AbortError).cause).toBe('enough');
    const result = (error as AbortError).result!;
    expect(result.stdoutText).toBe('partial\n');
    expect(result.streamed).toBe(false);
    expect(result.signal).toBe('SIGTERM');
    expectValidResult(result);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('with an already-aborted signal starts nothing', async () => {
    const sb = testSandbox();
    const file = join(dir, 'must-not-exist');
    await expect(sb.run(['touch', file], { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(AbortError);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(existsSync(file)).toBe(false);
  });

  it('after the command finished changes nothing', async () => {
    const sb = testSandbox();
    const controller = new AbortController();
    const result = await sb.run(['echo', 'done'], { signal: controller.signal });
    controller.abort();
    expect(result.exitCode).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
