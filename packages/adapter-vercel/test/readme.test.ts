import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { emulatorExample } from './readme-examples.js';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));

describe('README.md', () => {
  it('has TypeScript examples, each the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBe(3);
    for (const block of blocks) expect(examples).toContain(block);
  });

  it("the emulator's example runs with the real SDK", async () => {
    expect(await emulatorExample()).toBe('hi\n');
  });
});
