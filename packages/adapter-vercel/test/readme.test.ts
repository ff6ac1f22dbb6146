import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fencedBlocks, markdownSection } from '@sandstream/test-support/bench-results';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { emulatorExample } from './readme-examples.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const results = readFileSync(new URL('../bench/RESULTS.md', import.meta.url), 'utf8');
const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));

describe('README.md', () => {
  it('has TypeScript examples, each the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBe(3);
    for (const block of blocks) expect(examples).toContain(block);
  });

  it('quotes the latest run of bench/RESULTS.md verbatim, and the throughput of every run that missed its target', () => {
    const section = markdownSection(readme, 'Performance');
    const runs = fencedBlocks(results).filter((block) => block.heading.startsWith('Run of '));
    const latest = runs.at(-1);
    expect(latest, 'bench/RESULTS.md records no run').toBeDefined();
    const quoted = fencedBlocks(section).filter((block) => block.text.includes('streaming'));
    expect(quoted.map((block) => block.text), 'the README quotes one run, the latest of bench/RESULTS.md').toEqual([latest!.text]);
    expect(section).toContain(latest!.heading.slice('Run of '.length));
    for (const run of runs.filter((block) => block.text.includes('MISSED'))) {
      const ratio = /^streaming.*?(\d+\.\d+x)/m.exec(run.text)?.[1];
      expect(section, `the run of ${run.heading} missed the throughput target`).toContain(ratio);
    }
  });

  it("the emulator's example runs with the real SDK", async () => {
    expect(await emulatorExample()).toBe('hi\n');
  });
});
