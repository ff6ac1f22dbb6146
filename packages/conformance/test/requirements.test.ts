import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { CAPABILITIES } from '@sandstream/types';
// The one reader of statements out of spec.md, shared with scripts/sync-requirements.mjs.
import { extractStatements } from '../../types/scripts/spec-requirements.mjs';
import { CASES } from '../src/engine.js';
import { NOTHING_REFUSED } from '../src/refusals.js';
import { REQUIREMENTS, REQUIREMENTS_SPEC_VERSION } from '../src/requirements.js';
import { KIT_SPEC_VERSION } from '../src/version.js';

const specDir = new URL(`../../../spec/${KIT_SPEC_VERSION}/`, import.meta.url);
const spec = JSON.parse(readFileSync(new URL('requirements.json', specDir), 'utf8')) as {
  specVersion: string;
  requirements: Array<{ id: string; statement: string }>;
};
const SYNC = 'npm run sync-requirements -w @sandstream/conformance';

describe('requirements and cases', () => {
  test('the kit\'s requirement list equals the spec\'s requirements.json', () => {
    expect(REQUIREMENTS_SPEC_VERSION).toBe(spec.specVersion);
    // `heading` is derived from spec.md into the kit's copy only (requirements.json of a released revision is frozen).
    const stated = REQUIREMENTS.map(({ heading: _derived, ...requirement }) => requirement);
    expect(stated, `src/requirements.ts is stale; run ${SYNC}`).toEqual(spec.requirements);
  });

  test('every requirement\'s heading is the numbered heading of spec.md its tag stands under', () => {
    const text = readFileSync(new URL('spec.md', specDir), 'utf8');
    const literally = (words: string): string => words.replace(/[.*+?^$()|[\]{}\\]/g, '\\$&');
    for (const { id, index } of extractStatements(text)) {
      const { number, title } = REQUIREMENTS.find((r) => r.id === id)!.heading;
      // The heading line as spec.md writes it: `## 10. ExecResult and exit status`, `### 9.8 The termination sequence`.
      const at = new RegExp(`^#{2,4} ${literally(number)}\\.? ${literally(title)}$`, 'm').exec(text);
      expect(at !== null && at.index < index, `${id}: spec.md has no heading "${number} ${title}" before its tag; run ${SYNC}`).toBe(true);
      // Between that heading and the tag stands no other numbered heading.
      const between = text.slice(at!.index + at![0].length, index);
      expect(between, `${id} stands under a later heading than ${number} ${title}; run ${SYNC}`).not.toMatch(/^#{2,4} \d/m);
    }
  });

  test('every statement is the one spec.md states at its tag', () => {
    const fromSpec = extractStatements(readFileSync(new URL('spec.md', specDir), 'utf8'));
    expect(fromSpec.map((t) => t.id).sort()).toEqual(REQUIREMENTS.map((r) => r.id).sort());
    for (const { id, statement } of fromSpec) {
      expect(REQUIREMENTS.find((r) => r.id === id)?.statement, `${id}: run ${SYNC}`).toBe(statement);
    }
  });

  test('the kit declares the spec version of the requirements it checks', () => {
    expect(KIT_SPEC_VERSION).toBe(REQUIREMENTS_SPEC_VERSION);
  });

  test('every requirement id is proved by at least one case, but those the kit\'s own tests prove', () => {
    const covered = new Set(CASES.flatMap((c) => c.requirements));
    const missing = REQUIREMENTS.filter((r) => r.provedBy === undefined).map((r) => r.id).filter((id) => !covered.has(id));
    expect(missing, 'requirement ids without a case').toEqual([]);
  });

  // A requirement whose entry says "provedBy": "harness" (spec 1.3 sections 1 and 16) binds the kit
  // and the testees it talks to (section 18), not a Sandbox: a case against an adapter cannot
  // observe it, and the kit's own tests prove it instead (ADR-0018, its 1.3 note).
  const HARNESS = REQUIREMENTS.filter((r) => r.provedBy === 'harness');

  test('the requirements the harness proves are those of the testee protocol, and no case cites one', () => {
    expect(REQUIREMENTS.filter((r) => r.provedBy !== undefined && r.provedBy !== 'harness')).toEqual([]);
    expect(HARNESS.map((r) => r.id)).toEqual(REQUIREMENTS.filter((r) => r.id.startsWith('SS-TESTEE-')).map((r) => r.id));
    const citing = CASES.flatMap((c) => c.requirements.filter((id) => HARNESS.some((r) => r.id === id)).map((id) => `${c.id} -> ${id}`));
    expect(citing, 'a case proves what an adapter does, never what the harness does').toEqual([]);
  });

  test('every requirement the harness proves is named by a test of the kit\'s own', () => {
    // The kit's tests name the ids they prove in their titles, e.g. "... [SS-TESTEE-2, SS-TESTEE-5]".
    const testDir = new URL('./', import.meta.url);
    const texts = readdirSync(testDir, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.test.ts') && file !== 'requirements.test.ts')
      .map((file) => readFileSync(new URL(file, testDir), 'utf8'));
    const named = (id: string): boolean => texts.some((text) => new RegExp(`(?<![\\w-])${id}(?![\\w-])`).test(text));
    expect(HARNESS.map((r) => r.id).filter((id) => !named(id)), 'requirement ids the harness proves that no test of the kit names').toEqual([]);
  });

  test('every case cites only requirement ids the spec defines', () => {
    const known = new Set(REQUIREMENTS.map((r) => r.id));
    const unknown = CASES.flatMap((c) => c.requirements.filter((id) => !known.has(id)).map((id) => `${c.id} -> ${id}`));
    expect(unknown).toEqual([]);
    for (const c of CASES) expect(c.requirements.length, c.id).toBeGreaterThan(0);
  });

  test('case ids are unique and dotted lowercase', () => {
    const ids = CASES.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z0-9]+(?:[.-][a-z0-9]+)*$/);
  });

  test('a requirement gated by a capability is proved by cases that need that capability', () => {
    for (const requirement of REQUIREMENTS.filter((r) => r.capability !== undefined)) {
      const cases = CASES.filter((c) => c.requirements.includes(requirement.id));
      for (const c of cases) expect(c.needs ?? [], `${c.id} proves ${requirement.id}`).toContain(requirement.capability);
    }
  });

  test('a requirement that holds without a capability is proved by cases that run only without it', () => {
    for (const requirement of REQUIREMENTS.filter((r) => r.without !== undefined)) {
      const cases = CASES.filter((c) => c.requirements.includes(requirement.id));
      for (const c of cases) expect(c.without, `${c.id} proves ${requirement.id}`).toBe(requirement.without);
    }
  });

  test('every capability whose absence refuses something has a case that runs when it is absent', () => {
    // binary-output's absence has its own case (SS-TEXT-1); the replay capabilities' and
    // attach-reconnect's absence refuse nothing (ADR-0036), and the attach cases check a follow-only attach.
    for (const capability of CAPABILITIES.filter((c) => c === 'binary-output' || !NOTHING_REFUSED.includes(c))) {
      expect(CASES.some((c) => c.without === capability), capability).toBe(true);
    }
  });
});
