import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { unless } from '@sandstream/test-support/skips';
import { agentExample, justBashExample, stopExample } from './readme-examples.js';
import { toolCallingModel } from './model.js';
import { isolation } from './isolation.js';
import { marginOf, survivors, treeIn } from './tree.js';

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));


afterEach(() => {
  vi.restoreAllMocks();
});

describe('README.md', () => {
  it('has three TypeScript examples, the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBe(3);
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

  it("runs its example of stopping early: after the break, the abort ends the command's whole tree", async () => {
    const graceMs = 500;
    const sandbox = createLocalSandbox({ graceMs });
    const dir = mkdtempSync(join(tmpdir(), 'ai-sdk-readme-'));
    try {
      const pids = join(dir, 'pids');
      // Silent once it said FAIL: only the abort, or its timeout of 120 s, ends it.
      const command = `sleep 300 & echo $! > '${pids}'; echo $$ >> '${pids}'; echo 'FAIL test/a.test.ts'; wait`;
      const begin = performance.now();
      await stopExample(toolCallingModel('exec', { command }), sandbox);
      const returned = performance.now();
      const tree = treeIn(pids);
      expect(tree).toHaveLength(2);
      // SIGTERM at the abort, SIGKILL after the grace period; the margin scales with the example's own run.
      expect(await survivors(tree, returned + graceMs + marginOf(returned - begin))).toEqual([]);
    } finally {
      await sandbox.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs its just-bash example', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    await justBashExample();
    expect(log.mock.calls).toEqual([[0, 'hello\n']]);
  });
});
