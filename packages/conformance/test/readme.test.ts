import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');

describe.each([
  ['README.md', new URL('../../../README.md', import.meta.url), 3],
  ['packages/conformance/README.md', new URL('../README.md', import.meta.url), 4],
])('%s', (_name, path, count) => {
  test('every TypeScript example is type-checked code of test/readme-examples.ts', () => {
    const blocks = typescriptBlocks(path);
    expect(blocks).toHaveLength(count);
    for (const block of blocks) expect(examples).toContain(block);
  });
});
