import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { typescriptBlocks } from '@sandstream/test-support/readme-blocks';
import { askPython, describeRevision, runSnippet, runTests, sortLines } from './readme-examples.js';
import './helpers.js';
import { unless } from '@sandstream/test-support/skips';
import { localBackend } from '../src/index.js';

/** Why this machine has no terminal for the adapter, or undefined when it has one. */
const ptyUnavailable = localBackend().native.ptyUnavailable;

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');
const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));

const dir = mkdtempSync(join(tmpdir(), 'sandstream-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The benchmark tables of a markdown text: each `figure ...` header's rows, with the date of the `## ` section holding it. */
function benchTables(markdown: string): { date: string; rows: string[] }[] {
  const tables: { date: string; rows: string[] }[] = [];
  let date = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('## ')) date = /\d{4}-\d\d-\d\d \d\d:\d\d/.exec(line)?.[0] ?? '';
    if (!line.startsWith('figure ')) continue;
    const rows: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== '' && !lines[i]!.startsWith('```'); i++) rows.push(lines[i]!.trimEnd());
    tables.push({ date, rows: rows.filter((row) => !row.startsWith('---')) });
  }
  return tables;
}

describe('README.md', () => {
  it('has TypeScript examples, each the type-checked code of test/readme-examples.ts', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    for (const block of blocks) expect(examples).toContain(block);
  });

  it("quotes the latest full run of bench/RESULTS.md verbatim, and every ratio that missed its target in a recorded run", () => {
    const section = readme.slice(readme.indexOf('## Performance'));
    expect(section.length).toBeLessThan(readme.length);
    expect(section).toContain('(https://github.com/sandstream/sandstream/blob/main/packages/adapter-local/bench/RESULTS.md)');
    const runs = benchTables(readFileSync(new URL('../bench/RESULTS.md', import.meta.url), 'utf8')).filter((run) =>
      run.rows.some((row) => row.startsWith('stream() throughput, 1 GiB')),
    );
    const latest = runs.at(-1)!;
    expect(latest, 'bench/RESULTS.md records no full run').toBeDefined();
    const quoted = benchTables(section);
    expect(quoted.map((table) => table.rows), 'the README quotes one table, the latest run of bench/RESULTS.md').toEqual([latest.rows]);
    expect(section).toContain(latest.date);
    for (const run of runs) {
      for (const row of run.rows.filter((line) => /\bMISS\b/.test(line))) {
        const ratio = /\s(\d+\.\d+x)\s+[<>]=/.exec(row)?.[1];
        expect(section, `the run of ${run.date} missed: ${row}`).toContain(ratio);
      }
    }
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

  it('the plain-JavaScript example runs on this Node.js as written (no `await using`)', async () => {
    const plain = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1]!);
    expect(plain).toHaveLength(1);
    // The block's own code, its package import pointed at the built package (a temp file has no node_modules).
    const file = join(dir, 'plain-example.mjs');
    const built = new URL('../dist/index.js', import.meta.url).href;
    writeFileSync(file, plain[0]!.replace("from '@sandstream/adapter-local'", `from ${JSON.stringify(built)}`));
    const { runSnippetPlain } = (await import(file)) as { runSnippetPlain: (script: string) => Promise<string> };
    expect(await runSnippetPlain('echo private > /workspace/note; cat /workspace/note')).toBe('private\n');
  });

  it('sortLines() feeds standard input', async () => {
    expect(await sortLines(['pear', 'apple', 'fig'])).toEqual(['apple', 'fig', 'pear']);
  });

  unless(it, ptyUnavailable)('askPython() types on a terminal: the line is echoed, the answer follows', async () => {
    const screen = await askPython('6 * 7');
    expect(screen).toContain('print(6 * 7)\r\n');
    expect(screen).toContain('42\r\n');
  });
});
