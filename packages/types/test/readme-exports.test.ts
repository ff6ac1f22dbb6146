// The README says what the package holds: the contract and the runtime, and
// every subpath of the exports map (ADR-0048).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  name: string;
  exports: Record<string, unknown>;
};

/** The text under a `## ` heading, up to the next one. */
function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  expect(start, `README section "${title}"`).toBeGreaterThanOrEqual(0);
  const next = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, next === -1 ? undefined : next);
}

describe('README.md, what the package holds', () => {
  const holds = section('What it holds');

  it('names its two parts: the contract at the root entry, the runtime at /runtime', () => {
    expect(holds).toMatch(/\*\*The contract\*\*, the root entry `@sandstream\/types`/);
    expect(holds).toMatch(/\*\*The runtime\*\*, `@sandstream\/types\/runtime`/);
  });

  it('lists exactly the subpaths of the exports map', () => {
    const listed = [...holds.matchAll(/^\| `(@sandstream\/types[^`]*)` \|/gm)].map((match) => match[1]!);
    const exported = Object.keys(manifest.exports).map((key) => (key === '.' ? manifest.name : `${manifest.name}/${key.slice(2)}`));
    expect(listed.sort()).toEqual(exported.sort());
  });
});
