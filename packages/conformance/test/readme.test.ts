import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');

function tsBlocks(path: URL): string[] {
  const text = readFileSync(path, 'utf8');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) =>
    match[1]!
      .split('\n')
      .filter((line) => !line.startsWith('import '))
      .join('\n')
      .trim(),
  );
}

describe.each([
  ['README.md', new URL('../../../README.md', import.meta.url), 2],
  ['packages/conformance/README.md', new URL('../README.md', import.meta.url), 3],
])('%s', (_name, path, count) => {
  test('every TypeScript example is type-checked code of test/readme-examples.ts', () => {
    const blocks = tsBlocks(path);
    expect(blocks).toHaveLength(count);
    for (const block of blocks) expect(examples).toContain(block);
  });
});
