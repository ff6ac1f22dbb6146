import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { describeRevision, runSnippet, runTests, sortLines } from './readme-examples.js';
import './helpers.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));

const dir = mkdtempSync(join(tmpdir(), 'sandstream-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('README.md', () => {
  it('has TypeScript examples, each the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    for (const block of blocks) expect(examples).toContain(block);
  });

  it('ends with a Performance section that quotes a benchmark run of every figure', () => {
    const section = readme.slice(readme.indexOf('## Performance'));
    expect(section.length).toBeLessThan(readme.length);
    for (const figure of ['stream() throughput', "run(['true']) round trip", 'run() capture of 100 MiB', 'teardown, SIGTERM-honouring child', 'teardown, process tree', 'teardown, SIGTERM-ignoring tree', 'peak RSS growth']) {
      expect(section).toMatch(new RegExp(`^${figure.replace(/[()[\]']/g, '\\$&')}.*\\d+\\.\\d+x?\\s+[<>]=.*(PASS|MISS)$`, 'm'));
    }
    expect(section).toContain('(bench/RESULTS.md)');
  });

  it('runSnippet() runs in the isolated mode: its files are private, the host root read-only', async () => {
    const printed = await runSnippet('echo private > /workspace/note; cat /workspace/note; touch /usr/sandstream-readme 2>&1; ls /proc | grep -c "^[0-9]"');
    const [note, denied, count] = printed.trim().split('\n');
    expect(note).toBe('private');
    expect(denied).toContain('Read-only file system');
    expect(Number(count)).toBeLessThan(8);
  });

  it('runTests() streams a test script line by line', async () => {
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'readme-example', private: true, scripts: { test: 'echo passed; echo warning >&2' } }),
    );
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      expect(await runTests(dir)).toBe(true);
      const printed = log.mock.calls.map(([line]) => String(line));
      expect(printed).toContain('[stdout] passed');
      expect(printed).toContain('[stderr] warning');
    } finally {
      log.mockRestore();
    }
  });

  it('describeRevision() reads a commit subject', async () => {
    const repo = join(dir, 'repo');
    const git = (...args: string[]): void => {
      execFileSync('git', ['-C', repo, ...args], { stdio: 'ignore' });
    };
    execFileSync('git', ['init', '-q', repo]);
    git('-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '--allow-empty', '-m', 'first subject');
    expect(await describeRevision(repo, 'HEAD')).toBe('first subject');
    expect(await describeRevision(repo, 'no-such-revision')).toBeUndefined();
  });

  it('sortLines() feeds standard input', async () => {
    expect(await sortLines(['pear', 'apple', 'fig'])).toEqual(['apple', 'fig', 'pear']);
  });
});
