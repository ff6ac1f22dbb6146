import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADR_DIR, ROOT, SPEC_DIR } from './paths.js';

const FILE_NAME = /^(\d{4})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$/;
const STATUS = /^(?:proposed|accepted|rejected|deprecated|superseded by ADR-\d{4})$/;
const REQUIRED_SECTIONS = [
  'Context and Problem Statement',
  'Considered Options',
  'Decision Outcome',
  'Consequences',
  'Confirmation',
];

const files = readdirSync(ADR_DIR)
  .filter((file) => file.endsWith('.md') && file !== 'README.md')
  .sort();
const index = readFileSync(join(ADR_DIR, 'README.md'), 'utf8');
const requirementIds = new Set(
  (JSON.parse(readFileSync(join(SPEC_DIR, 'requirements.json'), 'utf8')) as { requirements: Array<{ id: string }> })
    .requirements.map((requirement) => requirement.id),
);

/** Parses the flat `key: value` YAML front matter MADR uses. */
function frontMatter(text: string): Record<string, string> | undefined {
  const match = /^---\n([\s\S]*?)\n---\n/.exec(text);
  if (match === null) return undefined;
  const fields: Record<string, string> = {};
  for (const line of match[1]!.split('\n')) {
    const field = /^([a-z-]+):\s*(.*)$/.exec(line);
    if (field) fields[field[1]!] = field[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return fields;
}

function headings(text: string): string[] {
  return [...text.matchAll(/^#{2,3} (.+)$/gm)].map((match) => match[1]!.trim());
}

/** The text of the section under a heading, up to the next heading of the same or a higher level. */
function section(text: string, title: string): string {
  const match = new RegExp(`^(#{2,3}) ${title}\\s*$`, 'm').exec(text);
  if (match === null) return '';
  const rest = text.slice(match.index + match[0].length);
  const next = new RegExp(`^#{1,${match[1]!.length}} `, 'm').exec(rest);
  return next === null ? rest : rest.slice(0, next.index);
}

describe('adrs/', () => {
  it('holds the foundational records', () => {
    expect(files.length).toBeGreaterThanOrEqual(9);
    expect(files).toContain('0001-record-architecture-decisions.md');
  });

  it('numbers records from 0001 without duplicates, leaving gaps only for reserved numbers', () => {
    const numbers = files.map((file) => Number(FILE_NAME.exec(file)?.[1]));
    expect(new Set(numbers).size, 'two records share a number').toBe(numbers.length);
    const reserved = new Set(
      [...section(index, 'Reserved numbers').matchAll(/^- (\d{4}):/gm)].map((match) => Number(match[1])),
    );
    const present = new Set(numbers);
    const gaps: number[] = [];
    for (let number = 1; number <= Math.max(...numbers); number++) {
      if (!present.has(number) && !reserved.has(number)) gaps.push(number);
    }
    expect(gaps, 'numbers missing from adrs/ that adrs/README.md does not reserve').toEqual([]);
  });
});

describe.each(files)('%s', (file) => {
  const text = readFileSync(join(ADR_DIR, file), 'utf8');

  it('is named NNNN-title-with-dashes.md', () => {
    expect(file).toMatch(FILE_NAME);
  });

  it('has front matter with a status and a date', () => {
    const fields = frontMatter(text);
    expect(fields, 'YAML front matter between --- lines at the top').toBeDefined();
    expect(fields!['status']).toMatch(STATUS);
    expect(fields!['date']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(Number.isNaN(Date.parse(fields!['date']!))).toBe(false);
  });

  it('has one title and the MADR sections', () => {
    expect(text.match(/^# .+$/gm)).toHaveLength(1);
    const found = headings(text);
    for (const title of REQUIRED_SECTIONS) expect(found, title).toContain(title);
  });

  it('names in its Confirmation what enforces it', () => {
    const confirmation = section(text, 'Confirmation');
    expect(confirmation.trim().length).toBeGreaterThan(0);
    expect(confirmation).toMatch(/SS-[A-Z]+-\d+|\.test(?:-d)?\.ts|\.ts\b/);
  });

  it('points only to repository files that exist', () => {
    const paths = [...text.matchAll(/`((?:packages|spec|adrs|\.changeset)\/[^`*\s<]+)`/g)].map((match) => match[1]!);
    expect(paths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it('cites only requirement ids that exist', () => {
    const cited = [...text.matchAll(/\bSS-[A-Z]+(?:-[A-Z]+)*-\d+\b/g)].map((match) => match[0]);
    expect(cited.filter((id) => !requirementIds.has(id))).toEqual([]);
  });

  it('is listed in adrs/README.md with its number, status and date', () => {
    const number = file.slice(0, 4);
    const fields = frontMatter(text) ?? {};
    const row = index.split('\n').find((line) => line.includes(`(${file})`));
    expect(row, `no row links to ${file}`).toBeDefined();
    const cells = row!.split('|').map((cell) => cell.trim());
    expect(cells[1]).toContain(number);
    expect(cells[2]).toBe(/^# (.+)$/m.exec(text)?.[1]);
    expect(cells[3]).toBe(fields['status']);
    expect(cells[4]).toBe(fields['date']);
  });
});

describe('adrs/README.md', () => {
  it('links only to records that exist', () => {
    const linked = [...index.matchAll(/\]\(([^)]+\.md)\)/g)].map((match) => match[1]!).filter((link) => FILE_NAME.test(link));
    expect(linked.sort()).toEqual(files);
  });
});
