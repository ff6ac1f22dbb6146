import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import type { ConformanceCase } from '../src/case.js';
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

/** The most lines a case file may have: a section that outgrows it moves helpers to `support/`. */
const MOST_LINES = 300;
const casesDir = new URL('../src/cases/', import.meta.url);
/** Every file of src/cases but index.ts, and the cases it exports (in lists, as the files do). */
const files = await Promise.all(
  readdirSync(casesDir)
    .filter((name) => name.endsWith('.ts') && name !== 'index.ts')
    .sort()
    .map(async (name) => {
      const exported = Object.values((await import(fileURLToPath(new URL(name, casesDir)))) as Record<string, unknown>);
      const isCase = (value: unknown): value is ConformanceCase => typeof value === 'object' && value !== null && 'id' in value && 'run' in value;
      const cases = exported.filter((value): value is ConformanceCase[] => Array.isArray(value) && value.length > 0 && value.every(isCase)).flat();
      return { name, cases, lines: readFileSync(new URL(name, casesDir), 'utf8').split('\n').length };
    }),
);

describe('each case file holds the cases of one spec section and is named after it', () => {
  test('the files hold every case of CASES, each once', () => {
    const filed = files.flatMap((file) => file.cases.map((c) => c.id)).sort();
    expect(filed).toEqual(CASES.map((c) => c.id).sort());
    // The very objects CASES reports, not copies that could drift.
    for (const file of files) for (const c of file.cases) expect(CASES, `${c.id} in ${file.name}`).toContain(c);
  });

  test("every case file is named after its cases' section, and holds only cases of that section", () => {
    const misfiled = files.flatMap((file) =>
      file.cases.map((c) => ({ file: file.name, id: c.id, section: sectionName(caseSection(c)!), belongsIn: sectionFileName(caseSection(c)!) })).filter((c) => c.belongsIn !== c.file),
    );
    expect(misfiled, 'move each case to the file of its section (or the section is the one of its first requirement: check that)').toEqual([]);
    expect(files.filter((file) => file.cases.length === 0).map((file) => file.name), 'files of src/cases with no case: helpers go to support/').toEqual([]);
  });

  test(`every case file is at most ${MOST_LINES} lines`, () => {
    const long = files.filter((file) => file.lines > MOST_LINES).map((file) => `${file.name}: ${file.lines} lines`);
    expect(long, 'move fixture scripts and helpers to src/cases/support/').toEqual([]);
  });
});
