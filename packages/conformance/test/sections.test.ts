import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { CASES } from '../src/engine.js';
import { caseSection, sectionFileName, sectionName } from '../src/sections.js';
import { KIT_SPEC_VERSION } from '../src/version.js';

const spec = readFileSync(new URL(`../../../spec/${KIT_SPEC_VERSION}/spec.md`, import.meta.url), 'utf8');
/** The numbered section headings of spec.md, `## 10. ExecResult and exit status` as `10 ExecResult and exit status`. */
const headings = new Set([...spec.matchAll(/^#{2,4} (\d+(?:\.\d+)*)\.? (.+)$/gm)].map((match) => `${match[1]} ${match[2]!.trim()}`));

describe("a case's section is the heading of its first requirement", () => {
  test('spec.md has numbered section headings to name', () => {
    expect(headings).toContain('9.8 The termination sequence');
    expect(headings).toContain('10 ExecResult and exit status');
  });

  test('every case has a section, and it is a heading of spec.md', () => {
    const without = CASES.filter((c) => caseSection(c) === undefined).map((c) => c.id);
    expect(without, 'cases whose first requirement has no heading in src/requirements.ts').toEqual([]);
    const unknown = CASES.map((c) => sectionName(caseSection(c)!)).filter((name) => !headings.has(name));
    expect(unknown, `spec/${KIT_SPEC_VERSION}/spec.md has no such heading`).toEqual([]);
  });

  test('a section names its file by number and title, without a leading "The"', () => {
    expect(sectionFileName({ number: '9.8', title: 'The termination sequence' })).toBe('9.8-termination-sequence.ts');
    expect(sectionFileName({ number: '5.2', title: 'onOutput' })).toBe('5.2-on-output.ts');
    expect(sectionFileName({ number: '9.6', title: 'Sandbox.close()' })).toBe('9.6-sandbox-close.ts');
    expect(sectionFileName({ number: '9.9', title: "Independence from the caller's signal" })).toBe('9.9-independence-from-the-callers-signal.ts');
    expect(sectionFileName({ number: '10', title: 'ExecResult and exit status' })).toBe('10-exec-result-and-exit-status.ts');
  });
});
