import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SandboxClosed } from '@sandstream/types';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { libraryExample } from './readme-examples.js';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));

describe('README.md', () => {
  it('has two TypeScript examples, the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBe(2);
    for (const block of blocks) expect(examples).toContain(block);
  });

  it('runs its library example: the exit code and output it prints, and the sandbox closed with the session', async () => {
    const { outcome, sandbox } = await libraryExample();
    expect(outcome).toMatchObject({ exitCode: 3, stdout: 'hello\n', truncated: false });
    expect(() => sandbox.stream(['true'])).toThrow(SandboxClosed);
  });
});
