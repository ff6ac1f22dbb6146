import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CAPABILITIES } from '../src/schema/capability.js';
import { SPEC_VERSION } from '../src/version.js';
// A plain ES module, shared with the kit's sync script.
import { extractStatements } from '../scripts/spec-requirements.mjs';
import { SPEC_DIR, SPEC_VERSIONS, specDir } from './paths.js';

interface Requirement {
  readonly id: string;
  readonly level: 'MUST' | 'SHOULD' | 'MAY';
  readonly section: string;
  readonly statement: string;
  readonly introduced: string;
  readonly capability?: string;
  readonly without?: string;
  readonly provedBy?: string;
}

// The pattern the ConformanceReport schema requires of requirement ids.
const ID_PATTERN = /^SS-[A-Z]+(?:-[A-Z]+)*-[0-9]+$/;
const VERSION_PATTERN = /^[0-9]+\.[0-9]+$/;

const document = JSON.parse(readFileSync(join(SPEC_DIR, 'requirements.json'), 'utf8')) as {
  specVersion: unknown;
  requirements: unknown;
};
const requirements = document.requirements as Requirement[];
const spec = readFileSync(join(SPEC_DIR, 'spec.md'), 'utf8');

/** Every `**[SS-...]**` tag of spec.md, with its offset. */
const tags = [...spec.matchAll(/\*\*\[(SS-[^\]]*)\]\*\*/g)].map((match) => ({ id: match[1]!, index: match.index }));

/** The paragraph (text between blank lines) around an offset. */
function paragraphAt(index: number): string {
  const start = spec.lastIndexOf('\n\n', index);
  const end = spec.indexOf('\n\n', index);
  return spec.slice(start === -1 ? 0 : start, end === -1 ? spec.length : end);
}

/** The headings that enclose an offset, outermost first. */
function headingsAt(index: number): string[] {
  const chain: Array<{ level: number; text: string }> = [];
  for (const match of spec.slice(0, index).matchAll(/^(#{1,6}) (.+)$/gm)) {
    const level = match[1]!.length;
    while (chain.length > 0 && chain[chain.length - 1]!.level >= level) chain.pop();
    chain.push({ level, text: match[2]! });
  }
  return chain.map((heading) => heading.text);
}

describe('requirements.json', () => {
  it('has the shape of a requirement list of this spec version', () => {
    expect(Object.keys(document).sort()).toEqual(['requirements', 'specVersion']);
    expect(document.specVersion).toBe(SPEC_VERSION);
    expect(Array.isArray(document.requirements)).toBe(true);
    expect(requirements.length).toBeGreaterThan(0);
    for (const requirement of requirements) {
      const where = JSON.stringify(requirement.id);
      const keys = Object.keys(requirement);
      for (const key of ['id', 'level', 'section', 'statement', 'introduced']) expect(keys, where).toContain(key);
      for (const key of keys) {
        expect(['id', 'level', 'section', 'statement', 'introduced', 'capability', 'without', 'provedBy'], where).toContain(key);
      }
      expect(['MUST', 'SHOULD', 'MAY'], where).toContain(requirement.level);
      expect(requirement.section, where).toMatch(/\S/);
      expect(requirement.introduced, where).toMatch(VERSION_PATTERN);
      if (requirement.capability !== undefined) expect(CAPABILITIES, where).toContain(requirement.capability);
      if (requirement.without !== undefined) expect(CAPABILITIES, where).toContain(requirement.without);
      expect(requirement.capability !== undefined && requirement.without !== undefined, `${where} has both capability and without`).toBe(false);
    }
  });

  it('marks only requirements on the kit and its testees as proved by the harness (Conventions, section 16)', () => {
    // "provedBy": "harness" exempts a requirement from the rule that a conformance case proves it
    // (ADR-0018): it binds the kit and the testees it talks to, not a Sandbox, so no case against
    // an adapter can observe it, and the kit's own tests prove it instead. The one value is
    // "harness"; such a requirement is gated on no capability (it does not depend on an adapter's
    // manifest), and the spec's Conventions and its section 16 say what the field means.
    const harness = requirements.filter((requirement) => requirement.provedBy !== undefined);
    for (const requirement of harness) {
      expect(requirement.provedBy, requirement.id).toBe('harness');
      expect(requirement.capability ?? requirement.without, `${requirement.id} is gated on a capability`).toBeUndefined();
    }
    expect(spec).toMatch(/## 1\. Conventions[^]*"provedBy": "harness"[^]*## 2\. Objects/);
    expect(spec).toMatch(/## 16\. Conformance[^]*"provedBy": "harness"[^]*## 17\. Versioning/);
  });

  it('copies each statement from spec.md, its one source', () => {
    // spec.md holds the text; requirements.json and the kit's generated
    // requirements.ts are copies (npm run sync-requirements -w @sandstream/conformance).
    const fromSpec = new Map(
      extractStatements(spec).map(({ id, statement }) => [id, statement]),
    );
    for (const { id, statement } of requirements) {
      expect(statement, `${id}: requirements.json differs from spec.md; run npm run sync-requirements -w @sandstream/conformance`).toBe(fromSpec.get(id));
    }
  });

  it('keeps every id of earlier revisions with its level and statement', () => {
    // A minor revision only adds (section 16): an inherited id keeps its meaning.
    for (const version of SPEC_VERSIONS.filter((v) => v !== SPEC_VERSION)) {
      const earlier = (JSON.parse(readFileSync(join(specDir(version), 'requirements.json'), 'utf8')) as { requirements: Requirement[] })
        .requirements;
      for (const old of earlier) {
        const now = requirements.find((requirement) => requirement.id === old.id);
        expect(now, `${old.id} of ${version} is missing`).toBeDefined();
        expect({ level: now!.level, statement: now!.statement, introduced: now!.introduced }, old.id).toEqual({
          level: old.level,
          statement: old.statement,
          introduced: old.introduced,
        });
      }
    }
  });

  it('uses unique ids that match the pattern of the report schema', () => {
    const ids = requirements.map((requirement) => requirement.id);
    for (const id of ids) expect(id).toMatch(ID_PATTERN);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('introduces no requirement after this spec version', () => {
    const [major, minor] = SPEC_VERSION.split('.').map(Number);
    for (const { id, introduced } of requirements) {
      const [m, n] = introduced.split('.').map(Number);
      expect(m! < major! || (m === major && n! <= minor!), `${id} introduced in ${introduced}`).toBe(true);
    }
  });

  it('states each requirement with its own level keyword', () => {
    for (const { id, level, statement } of requirements) {
      expect(statement, id).toMatch(new RegExp(`\\b${level}\\b`));
    }
  });
});

describe('spec.md', () => {
  it('tags every requirement exactly once', () => {
    const counts = new Map<string, number>();
    for (const { id } of tags) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const { id } of requirements) expect(counts.get(id) ?? 0, `tags of ${id}`).toBe(1);
  });

  it('tags no id that requirements.json does not define', () => {
    const known = new Set(requirements.map((requirement) => requirement.id));
    expect(tags.map((tag) => tag.id).filter((id) => !known.has(id))).toEqual([]);
  });

  it('states each tagged requirement at its level', () => {
    for (const requirement of requirements) {
      const tag = tags.find((candidate) => candidate.id === requirement.id);
      if (tag === undefined) continue; // reported by the tagging test
      expect(paragraphAt(tag.index), requirement.id).toMatch(new RegExp(`\\b${requirement.level}\\b`));
    }
  });

  it('places each tag under a heading of its section', () => {
    for (const requirement of requirements) {
      const tag = tags.find((candidate) => candidate.id === requirement.id);
      if (tag === undefined) continue;
      const headings = headingsAt(tag.index);
      const section = requirement.section.toLowerCase();
      expect(
        headings.some((heading) => heading.toLowerCase().includes(section)),
        `${requirement.id} (section "${requirement.section}") sits under ${JSON.stringify(headings)}`,
      ).toBe(true);
    }
  });

  it('cites RFC 2119 and RFC 8174 for its key words', () => {
    expect(spec).toMatch(/RFC 2119/);
    expect(spec).toMatch(/RFC 8174/);
    expect(spec).toMatch(/when, and only when, they appear in all\s+capitals/);
  });
});
