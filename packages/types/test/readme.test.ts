import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createExecResult } from '../src/result.js';
import { planRun, planStream } from '../src/runtime/execution-plan.js';
import { createEchoSandbox, manifestProblems, roundTrip, runTests } from './readme-examples.js';

/**
 * The ```ts blocks of the README, import lines removed and trimmed. Read here,
 * not through test-support's readme-blocks: test-support depends on this
 * package, so this package's tests cannot depend on it.
 */
function typescriptBlocks(url: URL): string[] {
  return [...readFileSync(url, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((match) =>
    match[1]!
      .split('\n')
      .filter((line) => !line.startsWith('import '))
      .join('\n')
      .trim(),
  );
}

const examples = readFileSync(new URL('./readme-examples.ts', import.meta.url), 'utf8');

const blocks = typescriptBlocks(new URL('../README.md', import.meta.url));
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The members of the option interfaces, as the committed API report records them. */
function optionMembers(): Set<string> {
  const report = readFileSync(new URL('../api/types.api.md', import.meta.url), 'utf8');
  const members = new Set<string>();
  for (const name of ['CommandOptions', 'RunOptions', 'StreamOptions']) {
    const body = new RegExp(`export interface ${name}\\b[^{]*\\{([^}]*)\\}`).exec(report)?.[1];
    expect(body, name).toBeDefined();
    for (const match of body!.matchAll(/readonly (\w+)\?:/g)) members.add(match[1]!);
  }
  return members;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('README.md', () => {
  it('has TypeScript examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(3);
  });

  it.each(blocks.map((block, index) => [index + 1, block] as const))(
    'example %i is the type-checked code of test/readme-examples.ts',
    (_index, block) => {
      expect(examples).toContain(block);
    },
  );

  it('lists every per-call option, and which of run() and stream() takes it, as the runtime checks them', () => {
    const section = readme.slice(readme.indexOf('## Options of `run()` and `stream()`'), readme.indexOf('## Examples'));
    const rows = [...section.matchAll(/^\| `(\w+)` \| (yes|no) \| (yes|no) \|/gm)].map(([, key, run, stream]) => ({ key: key!, run, stream }));
    expect(new Set(rows.map((row) => row.key))).toEqual(optionMembers());
    expect(rows.length).toBe(optionMembers().size);
    for (const { key, run, stream } of rows) {
      const given = { [key]: undefined };
      const takes = (plan: () => unknown): 'yes' | 'no' => {
        try {
          plan();
          return 'yes';
        } catch (error) {
          expect((error as Error).message).toContain('unknown option');
          return 'no';
        }
      };
      expect(takes(() => planRun(['true'], given)), `run() and ${key}`).toBe(run);
      expect(takes(() => planStream(['true'], given)), `stream() and ${key}`).toBe(stream);
    }
  });

  it('streams lines through the runtime and reports success', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    await using sb = createEchoSandbox();
    expect(await runTests(sb)).toBe(true);
    expect(log.mock.calls).toEqual([['[stdout] npm test']]);
  });

  it('round-trips a result through JSON', () => {
    const result = createExecResult({ exitCode: 1, stderr: Uint8Array.from([0xff, 0x0a]) });
    const back = roundTrip(result);
    expect([...back.stderr]).toEqual([0xff, 0x0a]);
    expect(back.stderrText).toBe('\uFFFD\n');
    expect(back.exitCode).toBe(1);
  });

  it('reports what is wrong with a manifest', () => {
    expect(manifestProblems({ streaming: true, stdin: false, 'resource-limits': false, user: false })).toEqual([]);
    expect(manifestProblems({ streaming: 'yes', stdin: false, 'resource-limits': false, user: false })).toEqual([
      '/streaming must be boolean',
    ]);
  });

  it('builds a sandbox whose run() and capability checks come from the runtime', async () => {
    await using sb = createEchoSandbox();
    const result = await sb.run(['echo', 'a b']);
    expect(result.stdoutText).toBe('echo a b\n');
    expect(result.streamed).toBe(false);
    expect(() => sb.stream(['cat'], { stdin: 'pipe' })).toThrow(/"stdin" capability/);
  });
});
