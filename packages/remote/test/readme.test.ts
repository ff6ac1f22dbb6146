import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { supervisorExample, transportExample } from './readme-examples.js';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));

describe('README.md', () => {
  it('has two TypeScript examples, the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBe(2);
    for (const block of blocks) expect(examples).toContain(block);
  });

  it('runs its example: the supervisor under /bin/sh, its reports cut out', async () => {
    expect((await supervisorExample()).map((r) => r.type)).toEqual(['start', 'exit', 'gone']);
  });

  it('runs its backend example: one start for a command that ends by itself, its exact status', async () => {
    expect(await transportExample()).toEqual({ stdoutText: 'hello\n', exitCode: 3, requests: 1 });
  });
});
