import { describe, expect, it, vi } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { readFileSync } from 'node:fs';
import { serverExample } from './readme-examples.js';
import { SKIP } from './server.js';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));

describe('README.md', () => {
  it('has TypeScript examples, each the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBe(2);
    const flat = (text: string): string => text.replace(/^\s+/gm, '');
    for (const block of blocks) expect(flat(examples)).toContain(flat(block));
  });

  unless(it, SKIP)("the server example runs and prints the unprivileged account's uid", async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      await serverExample();
      expect(log).toHaveBeenCalledWith('60123\n');
    } finally {
      log.mockRestore();
    }
  }, 60_000);
});
