import { readFileSync } from 'node:fs';
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
