import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { createExecResult } from '../src/result.js';
import { createEchoSandbox, manifestProblems, roundTrip, runTests } from './readme-examples.js';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');

const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));

afterEach(() => {
  vi.restoreAllMocks();
});

describe('README.md', () => {
  it('has TypeScript examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(3);
  });

  it.each(blocks.map((block, index) => [index + 1, block] as const))(
    'example %i is the type-checked code of test/readme-examples.ts',
    (_index, block) => {
      expect(examples).toContain(block);
    },
  );

  it('streams lines through the runtime and reports success', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    await using sb = createEchoSandbox();
    expect(await runTests(sb)).toBe(true);
    expect(log.mock.calls).toEqual([['[stdout] npm test']]);
  });

  it('round-trips a result through JSON', () => {
    const result = createExecResult({ exitCode: 1, stderr: Uint8Array.from([0xff, 0x0a]) });
    const back = roundTrip(result);
    expect([...back.stderr]).toEqual([0xff, 0x0a]);
    expect(back.stderrText).toBe('\uFFFD\n');
    expect(back.exitCode).toBe(1);
  });

  it('reports what is wrong with a manifest', () => {
    expect(manifestProblems({ streaming: true, stdin: false, 'resource-limits': false, user: false })).toEqual([]);
    expect(manifestProblems({ streaming: 'yes', stdin: false, 'resource-limits': false, user: false })).toEqual([
      '/streaming must be boolean',
    ]);
  });

  it('builds a sandbox whose run() and capability checks come from the runtime', async () => {
    await using sb = createEchoSandbox();
    const result = await sb.run(['echo', 'a b']);
    expect(result.stdoutText).toBe('echo a b\n');
    expect(result.streamed).toBe(false);
    expect(() => sb.stream(['cat'], { stdin: 'pipe' })).toThrow(/"stdin" capability/);
  });
});
