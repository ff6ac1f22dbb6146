import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { CAPABILITIES } from '@sandstream/types';
import { CASES } from '../src/engine.js';
import { REQUIREMENTS, REQUIREMENTS_SPEC_VERSION } from '../src/requirements.js';
import { KIT_SPEC_VERSION } from '../src/version.js';

const spec = JSON.parse(readFileSync(new URL('../../../spec/1.0/requirements.json', import.meta.url), 'utf8')) as {
  specVersion: string;
  requirements: unknown[];
};

describe('requirements and cases', () => {
  test('the kit\'s frozen requirement list equals the spec\'s requirements.json', () => {
    expect(REQUIREMENTS_SPEC_VERSION).toBe(spec.specVersion);
    expect(REQUIREMENTS).toEqual(spec.requirements);
  });

  test('the kit declares the spec version of the requirements it checks', () => {
    expect(KIT_SPEC_VERSION).toBe(REQUIREMENTS_SPEC_VERSION);
  });

  test('every requirement id is proved by at least one case', () => {
    const covered = new Set(CASES.flatMap((c) => c.requirements));
    const missing = REQUIREMENTS.map((r) => r.id).filter((id) => !covered.has(id));
    expect(missing).toEqual([]);
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
      for (const c of cases) expect(c.needs, `${c.id} proves ${requirement.id}`).toContain(requirement.capability);
    }
  });

  test('every capability has a negative case that runs when it is absent', () => {
    for (const capability of CAPABILITIES) {
      expect(CASES.some((c) => c.without === capability), capability).toBe(true);
    }
  });
});
