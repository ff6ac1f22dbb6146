import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFINITIONS, type DefinitionName } from '../src/schema/index.js';
import { validatorFor } from '../src/validators.js';
import { SPEC_DIR } from './paths.js';

// spec/<version>/examples/<Type>/*.json must validate against $defs[Type];
// spec/<version>/invalid/<Type>/*.json must not, and must fail with the
// keyword at the instance path recorded in invalid/expectations.json.

interface Expectation {
  readonly keyword: string;
  readonly instancePath: string;
}

const EXAMPLES = join(SPEC_DIR, 'examples');
const INVALID = join(SPEC_DIR, 'invalid');
const DEFINITION_NAMES = Object.keys(DEFINITIONS) as DefinitionName[];
/** The definitions that must have both valid and invalid fixtures. */
const REQUIRED = ['OutputChunk', 'ExecResult', 'CapabilityManifest', 'ConformanceReport', 'Capability'];

function typeDirectories(root: string): string[] {
  return readdirSync(root)
    .filter((entry) => statSync(join(root, entry)).isDirectory())
    .sort();
}

function fixtureFiles(root: string, type: string): string[] {
  if (!existsSync(join(root, type))) return [];
  return readdirSync(join(root, type))
    .filter((file) => file.endsWith('.json'))
    .sort();
}

function load(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8')) as unknown;
}

function all(root: string): Array<[type: string, file: string]> {
  return typeDirectories(root).flatMap((type) => fixtureFiles(root, type).map((file) => [type, file] as [string, string]));
}

const expectations = load(join(INVALID, 'expectations.json')) as Record<string, Expectation>;
const examples = all(EXAMPLES);
const invalid = all(INVALID);

describe('fixture layout', () => {
  it('names only definitions of the spec document', () => {
    for (const root of [EXAMPLES, INVALID]) {
      for (const type of typeDirectories(root)) {
        expect(DEFINITION_NAMES, `${root}/${type} is not a $defs entry`).toContain(type);
      }
    }
  });

  it('holds nothing but JSON fixtures (and the expectations file)', () => {
    for (const root of [EXAMPLES, INVALID]) {
      for (const type of typeDirectories(root)) {
        const stray = readdirSync(join(root, type)).filter((file) => !file.endsWith('.json'));
        expect(stray, `${root}/${type}`).toEqual([]);
      }
    }
    const loose = readdirSync(INVALID).filter(
      (entry) => entry !== 'expectations.json' && !statSync(join(INVALID, entry)).isDirectory(),
    );
    expect(loose).toEqual([]);
    expect(readdirSync(EXAMPLES).filter((entry) => !statSync(join(EXAMPLES, entry)).isDirectory())).toEqual([]);
  });

  it('covers the main definitions with valid and invalid fixtures', () => {
    for (const type of REQUIRED) {
      expect(fixtureFiles(EXAMPLES, type).length, `examples/${type}`).toBeGreaterThanOrEqual(2);
      expect(fixtureFiles(INVALID, type).length, `invalid/${type}`).toBeGreaterThanOrEqual(2);
    }
  });

  it('gives every $defs entry both a valid and an invalid fixture', () => {
    // spec.md promises fixtures for every definition; a new definition needs its own.
    for (const type of DEFINITION_NAMES) {
      expect(fixtureFiles(EXAMPLES, type).length, `examples/${type} is missing or empty`).toBeGreaterThan(0);
      expect(fixtureFiles(INVALID, type).length, `invalid/${type} is missing or empty`).toBeGreaterThan(0);
    }
  });

  it('records an expectation for every invalid fixture, and none for a missing file', () => {
    const files = invalid.map(([type, file]) => `${type}/${file}`).sort();
    expect(Object.keys(expectations).sort()).toEqual(files);
  });

  it('records expectations of the right shape', () => {
    for (const [name, expectation] of Object.entries(expectations)) {
      expect(Object.keys(expectation).sort(), name).toEqual(['instancePath', 'keyword']);
      expect(typeof expectation.keyword, name).toBe('string');
      expect(expectation.instancePath, name).toMatch(/^(?:\/[^/]*)*$/);
    }
  });
});

describe.each(examples)('examples/%s/%s', (type, file) => {
  it(`is a valid ${type}`, () => {
    const validate = validatorFor(type as DefinitionName);
    const valid = validate(load(join(EXAMPLES, type, file)));
    expect(validate.issues).toEqual([]);
    expect(valid).toBe(true);
  });
});

describe.each(invalid)('invalid/%s/%s', (type, file) => {
  it(`is not a valid ${type}, failing for the recorded reason`, () => {
    const expected = expectations[`${type}/${file}`];
    expect(expected, `no entry for ${type}/${file} in invalid/expectations.json`).toBeDefined();
    const validate = validatorFor(type as DefinitionName);
    expect(validate(load(join(INVALID, type, file)))).toBe(false);
    const reasons = validate.issues.map(({ keyword, instancePath }) => ({ keyword, instancePath }));
    expect(reasons).toContainEqual({ keyword: expected!.keyword, instancePath: expected!.instancePath });
  });
});
