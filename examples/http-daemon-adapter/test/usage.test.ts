import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { createHttpSandbox, startDaemon, type Daemon } from '../src/index.js';
import { printOutput as printTypeScript } from './usage-typescript.js';
// @ts-expect-error: plain JavaScript, checked by running it
import { printOutput as printPlain } from './usage-plain.mjs';

/** The guide's two forms of the same scope, run against the example's daemon. */
let daemon: Daemon;
beforeAll(async () => {
  daemon = await startDaemon();
});
afterAll(async () => {
  await daemon?.stop();
});

describe.each([
  ['TypeScript with await using', printTypeScript],
  ['plain JavaScript with try/finally', printPlain as typeof printTypeScript],
])('%s', (_, printOutput) => {
  test('prints both streams and returns the exit code', async () => {
    const written: string[] = [];
    const capture = (chunk: string | Uint8Array): boolean => {
      written.push(Buffer.from(chunk).toString('utf8'));
      return true;
    };
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
    try {
      await using sandbox = createHttpSandbox(daemon.url);
      const code = await printOutput(sandbox, ['sh', '-c', 'echo out; echo err >&2; exit 3']);
      expect(code).toBe(3);
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
    expect(written.join('').split('\n').sort()).toEqual(['', 'err', 'out']);
  });

  test('leaving the scope by an exception terminates the command', async () => {
    await using sandbox = createHttpSandbox(daemon.url);
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => {
      throw new Error('the reader gave up');
    });
    try {
      const pidFile = `/tmp/sandstream-usage-${process.pid}-${Math.random().toString(36).slice(2)}`;
      const script = `echo $$ > ${pidFile}; echo ready; exec sleep 60`;
      await expect(printOutput(sandbox, ['sh', '-c', script])).rejects.toThrow('the reader gave up');
      out.mockRestore();
      const probe = await sandbox.run(['sh', '-c', `kill -0 "$(cat ${pidFile})" 2>/dev/null && echo alive || echo gone; rm -f ${pidFile}`]);
      expect(probe.stdoutText).toBe('gone\n');
    } finally {
      out.mockRestore();
    }
  });
});
