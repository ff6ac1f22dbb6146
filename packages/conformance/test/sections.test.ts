import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { CASES } from '../src/engine.js';
import { CASE_GROUP_SECTIONS, caseGroup } from '../src/sections.js';
import { KIT_SPEC_VERSION } from '../src/version.js';

const spec = readFileSync(new URL(`../../../spec/${KIT_SPEC_VERSION}/spec.md`, import.meta.url), 'utf8');
/** The section headings of spec.md, `## 9. Teardown` as `9. Teardown`. */
const headings = new Set([...spec.matchAll(/^#{2,4} (\d.*)$/gm)].map((match) => match[1]!.trim()));

describe("a case id's first segment names a spec section", () => {
  test('spec.md has numbered section headings to name', () => {
    expect(headings).toContain('9. Teardown');
    expect(headings).toContain('6.4 Standard input');
  });

  test('every case belongs to a group listed in CASE_GROUP_SECTIONS', () => {
    const unlisted = CASES.map((c) => c.id).filter((id) => !Object.hasOwn(CASE_GROUP_SECTIONS, caseGroup(id)));
    expect(unlisted, 'add the group of these cases to src/sections.ts').toEqual([]);
  });

  test("every group's section is a heading of spec.md", () => {
    const missing = Object.entries(CASE_GROUP_SECTIONS).filter(([, heading]) => !headings.has(heading));
    expect(missing, `spec/${KIT_SPEC_VERSION}/spec.md has no such heading`).toEqual([]);
  });

  test('every group listed has cases', () => {
    const groups = new Set(CASES.map((c) => caseGroup(c.id)));
    expect(Object.keys(CASE_GROUP_SECTIONS).filter((group) => !groups.has(group))).toEqual([]);
  });
});
