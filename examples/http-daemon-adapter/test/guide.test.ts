import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { GUIDE, INCLUDE, region } from '../scripts/guide.mjs';

/**
 * docs/writing-an-adapter.md shows this example's code: each block after an
 * include marker must be exactly that region of the file, so the guide
 * cannot drift from code the kit checks. `npm run guide:update` fixes a drift.
 */
const guide = readFileSync(GUIDE, 'utf8');
const includes = [...guide.matchAll(INCLUDE)].map(([, , file, name, shown]) => ({ file: file!, name: name!, shown: shown! }));

describe('docs/writing-an-adapter.md', () => {
  test('every include marker is followed by its code block', () => {
    const markers = guide.match(/<!-- include:/g)?.length ?? 0;
    expect(includes.length).toBe(markers);
    expect(includes.length).toBeGreaterThanOrEqual(10);
  });

  for (const { file, name, shown } of includes) {
    test(`${file}#${name} is the example's code`, () => {
      expect(shown).toBe(region(file, name));
    });
  }

  test('a region is found by its markers, and an unknown one is refused', () => {
    expect(region('src/protocol.ts', 'protocol')).toMatch(/^\/\*\* The body of `POST \/commands`\. \*\/\nexport interface StartRequest/);
    expect(() => region('src/protocol.ts', 'no-such-region')).toThrow(/no region/);
  });
});

describe('relative links of the guide and of VERSIONING.md', () => {
  const documents = [GUIDE, new URL('../VERSIONING.md', GUIDE)];
  for (const document of documents) {
    const text = readFileSync(document, 'utf8');
    const targets = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((match) => match[1]!).filter((target) => !/^[a-z]+:/.test(target));
    test(`${document.pathname.split('/').at(-1)}: ${targets.length} links, each to a file of the repository`, () => {
      expect(targets.length).toBeGreaterThan(0);
      expect(targets.filter((target) => !existsSync(new URL(target, document)))).toEqual([]);
    });
  }
});
