import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFINITIONS, type DefinitionName } from '../src/schema/index.js';
import { validatorFor } from '../src/validators.js';
import { SPEC_VERSION } from '../src/version.js';
import { SPEC_VERSIONS, specDir } from './paths.js';
import { committedValidators } from './spec-validators.js';

// spec/<version>/examples/<Type>/*.json must validate against $defs[Type];
// spec/<version>/invalid/<Type>/*.json must not, and must fail with the
// keyword at the instance path recorded in invalid/expectations.json.
// Every published revision keeps passing against its own committed schema;
// the current one also against the schema its TypeBox sources generate.

interface Expectation {
  readonly keyword: string;
  readonly instancePath: string;
}

/** The definitions that must have both valid and invalid fixtures. */
const REQUIRED = ['OutputChunk', 'ExecResult', 'CapabilityManifest', 'ConformanceReport', 'Capability'];

/**
 * SHA-256 over the sorted paths and contents of spec/<version>/. A published
 * revision is frozen (ADR-0006): only a correction that changes no
 * behaviour may touch it, and such a correction updates this digest in the
 * same commit, saying why.
 */
const FROZEN: Readonly<Record<string, string>> = {
  '1.0': '8459f05f84e61c0b94480088311c3393684834310567ac99e7d8a09ef1656216',
  '1.1': '06a44bd696ac2dacf617216746f1808b230825a16e74ddd20f68f56a322a0dff',
  '1.2': 'bab21815193a73052fb6d3eaad0e17cd77d389c43b6da19aa7620173f59a6cf4',
  '1.3': '380721d0a2a53c6da9d48307501f367c0a6841b09841c7a628a3ccd020e5c53a',
  '1.4': '3b068ee30f91e78e6317fc0de4d300611ba8e58c23470267bcb89a452d0e2aa2',
};

function typeDirectories(root: string): string[] {
  if (!existsSync(root)) return [];
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

function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((entry) => statSync(join(root, entry)).isFile())
    .sort();
}

function digestOf(root: string): string {
  const hash = createHash('sha256');
  for (const file of filesUnder(root)) {
    hash.update(`${file.split('\\').join('/')}\0`);
    hash.update(readFileSync(join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

describe('published revisions', () => {
  it.each(Object.entries(FROZEN))('spec/%s/ is frozen', (version, digest) => {
    expect(digestOf(specDir(version)), `spec/${version}/ changed; a published revision is frozen (ADR-0006)`).toBe(digest);
  });

  it('lists every revision directory, the current one last', () => {
    const directories = readdirSync(specDir('.'))
      .filter((entry) => statSync(join(specDir('.'), entry)).isDirectory())
      .sort();
    expect(directories).toEqual([...SPEC_VERSIONS]);
    expect(SPEC_VERSIONS.at(-1)).toBe(SPEC_VERSION);
    for (const version of SPEC_VERSIONS.slice(0, -1)) expect(Object.keys(FROZEN), version).toContain(version);
  });
});

describe.each(SPEC_VERSIONS)('spec/%s fixtures', (version) => {
  const root = specDir(version);
  const EXAMPLES = join(root, 'examples');
  const INVALID = join(root, 'invalid');
  const committed = committedValidators(version);
  const definitionNames = Object.keys((JSON.parse(readFileSync(join(root, 'schema.json'), 'utf8')) as { $defs: object }).$defs);
  const expectations = load(join(INVALID, 'expectations.json')) as Record<string, Expectation>;
  const examples = all(EXAMPLES);
  const invalid = all(INVALID);
  const current = version === SPEC_VERSION;

  describe('layout', () => {
    if (current) {
      it('names the same definitions as the TypeBox sources', () => {
        expect(definitionNames).toEqual(Object.keys(DEFINITIONS));
      });
    }

    it('names only definitions of the spec document', () => {
      for (const base of [EXAMPLES, INVALID]) {
        for (const type of typeDirectories(base)) {
          expect(definitionNames, `${relative(root, base)}/${type} is not a $defs entry`).toContain(type);
        }
      }
    });

    it('holds nothing but JSON fixtures (and the expectations file)', () => {
      for (const base of [EXAMPLES, INVALID]) {
        for (const type of typeDirectories(base)) {
          const stray = readdirSync(join(base, type)).filter((file) => !file.endsWith('.json'));
          expect(stray, `${base}/${type}`).toEqual([]);
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
      for (const type of definitionNames) {
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
    const value = load(join(EXAMPLES, type, file));

    it(`is a valid ${type} against spec/${version}/schema.json`, () => {
      const validate = committed(type);
      const valid = validate(value);
      expect(validate.reasons).toEqual([]);
      expect(valid).toBe(true);
    });

    if (current) {
      it(`is a valid ${type} against the generated schema`, () => {
        const validate = validatorFor(type as DefinitionName);
        const valid = validate(value);
        expect(validate.issues).toEqual([]);
        expect(valid).toBe(true);
      });
    }
  });

  describe.each(invalid)('invalid/%s/%s', (type, file) => {
    const value = load(join(INVALID, type, file));
    const expected = expectations[`${type}/${file}`];

    it(`is not a valid ${type} against spec/${version}/schema.json, failing for the recorded reason`, () => {
      expect(expected, `no entry for ${type}/${file} in invalid/expectations.json`).toBeDefined();
      const validate = committed(type);
      expect(validate(value)).toBe(false);
      expect(validate.reasons).toContainEqual({ keyword: expected!.keyword, instancePath: expected!.instancePath });
    });

    if (current) {
      it(`is not a valid ${type} against the generated schema, for the recorded reason`, () => {
        const validate = validatorFor(type as DefinitionName);
        expect(validate(value)).toBe(false);
        const reasons = validate.issues.map(({ keyword, instancePath }) => ({ keyword, instancePath }));
        expect(reasons).toContainEqual({ keyword: expected!.keyword, instancePath: expected!.instancePath });
      });
    }
  });
});

describe('a minor revision only adds', () => {
  // Everything an earlier 1.x implementation wrote is still valid in the current revision (ADR-0006, ADR-0012).
  const older = SPEC_VERSIONS.slice(0, -1);
  describe.each(older)('spec/%s examples', (version) => {
    const examples = all(join(specDir(version), 'examples'));
    it.each(examples)(`%s/%s is valid against spec/${SPEC_VERSION}/schema.json`, (type, file) => {
      const validate = validatorFor(type as DefinitionName);
      const valid = validate(load(join(specDir(version), 'examples', type, file)));
      expect(validate.issues).toEqual([]);
      expect(valid).toBe(true);
    });
  });
});

describe('a consumer pinned to an earlier 1.x revision reads this one', () => {
  // What an implementation of the current revision writes is valid against the
  // reader.json of every earlier revision that has one (ADR-0012): its new
  // capabilities are booleans, its new error codes and values fit the open enums.
  const readers = SPEC_VERSIONS.slice(0, -1).filter((version) => existsSync(join(specDir(version), 'reader.json')));
  const examples = all(join(specDir(SPEC_VERSION), 'examples'));

  it('has an earlier reader to check against', () => {
    expect(readers.length).toBeGreaterThan(0);
  });

  describe.each(readers)('spec/%s/reader.json', (version) => {
    const reader = committedValidators(version, 'reader.json');
    it.each(examples)(`reads examples/%s/%s of spec/${SPEC_VERSION}`, (type, file) => {
      const read = reader(type);
      expect(read(load(join(specDir(SPEC_VERSION), 'examples', type, file))), JSON.stringify(read.reasons)).toBe(true);
    });
  });
});

describe(`spec/${SPEC_VERSION}/reader.json`, () => {
  // reader/<Type>/*.json: what a later 1.x revision may write. Valid for a
  // consumer pinned to 1.x (reader.json), invalid for this revision's exact
  // schema, which closes every object.
  const root = specDir(SPEC_VERSION);
  const reader = committedValidators(SPEC_VERSION, 'reader.json');
  const exact = committedValidators(SPEC_VERSION);
  const later = all(join(root, 'reader'));

  it('has fixtures for the objects that cross a wire', () => {
    const types = new Set(later.map(([type]) => type));
    for (const type of ['OutputChunk', 'ExecResult', 'CapabilityManifest', 'ConformanceReport']) expect(types, type).toContain(type);
  });

  it.each(later)('reader/%s/%s is read by reader.json and rejected by schema.json', (type, file) => {
    const value = load(join(root, 'reader', type, file));
    const read = reader(type);
    expect(read(value), JSON.stringify(read.reasons)).toBe(true);
    expect(validatorFor(type as DefinitionName, { document: 'reader' })(value)).toBe(true);
    expect(exact(type)(value)).toBe(false);
  });

  it.each(all(join(root, 'examples')))('accepts examples/%s/%s', (type, file) => {
    const read = reader(type);
    expect(read(load(join(root, 'examples', type, file))), JSON.stringify(read.reasons)).toBe(true);
  });

  it('still rejects what no 1.x revision writes', () => {
    const read = reader('ExecResult');
    const result = load(join(root, 'examples', 'ExecResult', 'success.json')) as Record<string, unknown>;
    expect(read({ ...result, exitCode: 256 })).toBe(false);
    expect(read({ ...result, stdout: 'not base64!' })).toBe(false);
    expect(read({ ...result, streamed: true, stdoutTruncated: true, stdout: '' })).toBe(false);
    const manifest = reader('CapabilityManifest');
    expect(manifest({ streaming: true, stdin: true, 'resource-limits': false, user: false, 'later-capability': 'yes' })).toBe(false);
    expect(manifest({ streaming: true, stdin: true, 'resource-limits': false })).toBe(false);
    // The 1.2 manifest rules (ADR-0036) bind every later revision too.
    const base = { streaming: true, stdin: true, 'resource-limits': false, user: false };
    expect(manifest({ ...base, attach: true, 'replay-tail': true, 'later-capability': true })).toBe(true);
    expect(manifest({ ...base, attach: true, 'replay-full': true, 'replay-tail': true })).toBe(false);
    expect(manifest({ ...base, 'replay-tail': true })).toBe(false);
    expect(manifest({ ...base, attach: false, 'attach-reconnect': true })).toBe(false);
  });
});
