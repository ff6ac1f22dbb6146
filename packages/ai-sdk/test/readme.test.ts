import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { unless } from '@sandstream/test-support/skips';
import { agentExample, justBashExample } from './readme-examples.js';
import { toolCallingModel } from './model.js';
import { isolation } from './isolation.js';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));


afterEach(() => {
  vi.restoreAllMocks();
});

describe('README.md', () => {
  it('has two TypeScript examples, the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBe(2);
    for (const block of blocks) expect(examples).toContain(block);
  });

  unless(it, isolation)('runs its agent example: preliminary results, then the result', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    await agentExample(toolCallingModel('exec', { command: 'ls /etc | wc -l' }));
    const labels = log.mock.calls.map((call) => call[0]);
    expect(labels[0]).toBe('running:');
    expect(labels.at(-1)).toBe('result:');
    expect(log.mock.calls.at(-1)![1]).toMatchObject({ status: 'exited', exitCode: 0, stdoutLines: 1 });
  });

  it('runs its just-bash example', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    await justBashExample();
    expect(log.mock.calls).toEqual([[0, 'hello\n']]);
  });
});
