/**
 * Many writes to one command's standard input do not pile up listeners on
 * the command's signal: fetch (undici) keeps its listener on the signal it
 * is given until the request is garbage-collected, so 1500 writes before a
 * collection used to raise MaxListenersExceededWarning ("possible memory
 * leak"). Found by the soak (packages/soak), seed 1 on vercel, a stdin
 * reader fed in 1-byte pieces.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testSandbox, useEmulator, within } from './helpers.js';

const emulator = useEmulator();

const warnings: Error[] = [];
const onWarning = (warning: Error): void => void warnings.push(warning);
beforeEach(() => {
  warnings.length = 0;
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
});

describe('standard input', () => {
  it('takes 1600 writes to one command without a listener warning, every byte in order', async () => {
    const sandbox = await testSandbox();
    await using proc = sandbox.stream(['cat'], { stdin: 'pipe' });
    const sent: string[] = [];
    for (let i = 0; i < 1600; i++) {
      const piece = String.fromCharCode(97 + (i % 26));
      sent.push(piece);
      await proc.stdin!.write(piece);
    }
    await proc.stdin!.end();
    let received = '';
    const decoder = new TextDecoder();
    for await (const chunk of proc) received += decoder.decode(chunk.data, { stream: true });
    expect(received).toBe(sent.join(''));
    // Warnings are emitted on a later tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
  }, 120_000);

  it('closes standard input even when the first close is cut off on the link: the command sees end-of-file', async () => {
    const sandbox = await testSandbox();
    await using proc = sandbox.stream(['sh', '-c', 'cat; echo eof'], { stdin: 'pipe' });
    await proc.stdin!.write('x\n');
    // The next request to the stdin endpoint (the close) has its connection reset before it is handled.
    emulator().inject({ kind: 'reset', route: 'stdin', times: 1 });
    await proc.stdin!.end();
    const result = await within(60_000, proc.wait(), 'the command after its input closed');
    expect(result.exitCode).toBe(0);
    const closes = emulator().requests.filter((r) => r.route === 'stdin');
    expect(closes.filter((r) => r.status === -1).length).toBe(1);
  }, 120_000);
});
