/**
 * Property-based fuzzing of the wire forms and of option validation: the
 * decoders and validators on arbitrary JSON (wrong types, huge strings,
 * deep nesting, `__proto__` / `constructor` / `prototype` as own keys), and
 * planRun / planStream / validateArgv / validateEnv on arbitrary values.
 * Each input yields a valid object or the spec's typed error, never another
 * exception, and leaves Object.prototype as it was. The inputs are built
 * by test/wire-arbitraries.ts.
 *
 * Seeds and run counts are fixed so that `npm test` is deterministic; each
 * property prints them. SANDSTREAM_FUZZ_RUNS (runs per property) and
 * SANDSTREAM_FUZZ_SEED scale a longer run; a failure prints the seed, the
 * path and the counterexample that reproduce it.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgument } from '../src/errors.js';
import { CAPABILITIES, DEFINITIONS, hasCapability, type DefinitionName } from '../src/schema/index.js';
import { planRun, planStream, validateArgv } from '../src/runtime/execution-plan.js';
import { validateEnv } from '../src/runtime/environment.js';
import {
  decodeExecResult,
  decodeOutputChunk,
  encodeExecResult,
  encodeOutputChunk,
  validatorFor,
} from '../src/validators.js';
import { CHUNK_KEYS, RESULT_KEYS, anyArgv, anyKey, anyOptions, anyValue, mutated, topLevelText, validChunk, validResult } from './wire-arbitraries.js';

const SEED = process.env['SANDSTREAM_FUZZ_SEED'] === undefined ? 0x5a_5d_01 : Number(process.env['SANDSTREAM_FUZZ_SEED']);
const RUNS = process.env['SANDSTREAM_FUZZ_RUNS'] === undefined ? undefined : Number(process.env['SANDSTREAM_FUZZ_RUNS']);
/** Generous: the larger inputs (MiB strings, 10 000 levels) take a while on a loaded machine; a longer run gets 100 ms a run more. */
const PROPERTY_TIMEOUT_MS = Math.max(120_000, (RUNS ?? 0) * 100);

/**
 * Runs a property with this file's seed and `runs` (unless overridden) and
 * prints what ran. Without shrinking unless SANDSTREAM_FUZZ_SHRINK=1, so
 * that a failure in `npm test` reports at once; the report carries the seed
 * and path either way.
 */
function check<T>(name: string, property: fc.IProperty<T>, runs: number): void {
  const numRuns = RUNS ?? runs;
  const started = performance.now();
  fc.assert(property, { seed: SEED, numRuns, endOnFailure: process.env['SANDSTREAM_FUZZ_SHRINK'] !== '1' });
  console.log(`[fuzz] ${name}: seed=${SEED} runs=${numRuns} ${Math.round(performance.now() - started)} ms`);
}

// ---- what a decoder may do ------------------------------------------------

type Outcome<T> = { ok: true; value: T } | { ok: false; error: InvalidArgument };

/** Calls `fn`; a thrown InvalidArgument is an outcome, anything else thrown fails the property. */
function outcome<T>(fn: () => T): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    if (error instanceof InvalidArgument) {
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(typeof error.key).toBe('string');
      return { ok: false, error };
    }
    throw new Error(`expected a value or InvalidArgument, got ${describeThrown(error)}`, { cause: error });
  }
}

function describeThrown(error: unknown): string {
  return error instanceof Error ? `${error.constructor.name}: ${error.message.slice(0, 300)}` : `a thrown ${typeof error}`;
}

/** Sends a value through JSON text, so `__proto__` keys arrive as own properties, as a wire delivers them. */
function wire(text: string): unknown {
  return JSON.parse(text) as unknown;
}

function decodesExecResult(json: unknown): void {
  const result = outcome(() => decodeExecResult(json));
  if (!result.ok) return;
  const value = result.value;
  expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  const encoded = encodeExecResult(value);
  expect(validatorFor('ExecResult')(encoded)).toBe(true);
  // Round trip: what was accepted is exactly what comes back out.
  expect(JSON.parse(JSON.stringify(encoded))).toEqual(JSON.parse(JSON.stringify(json)));
  expect(value.stdoutText).toBe(new TextDecoder('utf-8', { ignoreBOM: true }).decode(value.stdout));
}

function decodesOutputChunk(json: unknown): void {
  const result = outcome(() => decodeOutputChunk(json));
  if (!result.ok) return;
  const value = result.value;
  expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  expect(value.data).toBeInstanceOf(Uint8Array);
  const encoded = encodeOutputChunk(value);
  expect(validatorFor('OutputChunk')(encoded)).toBe(true);
  expect(JSON.parse(JSON.stringify(encoded))).toEqual(JSON.parse(JSON.stringify(json)));
}

// ---- prototype pollution ---------------------------------------------------

let prototypeKeys: string[] = [];
beforeAll(() => {
  prototypeKeys = Reflect.ownKeys(Object.prototype).map(String).sort();
});

function expectUnpolluted(): void {
  expect(Reflect.ownKeys(Object.prototype).map(String).sort()).toEqual(prototypeKeys);
  const probe = {} as Record<string, unknown>;
  for (const name of ['polluted', 'stream', 'data', 'exitCode', 'signal', 'stdout', 'a', 'timeout', 'env']) {
    expect(probe[name], `Object.prototype.${name}`).toBeUndefined();
  }
  expect(Object.getPrototypeOf(probe)).toBe(Object.prototype);
  expect(Array.prototype).not.toHaveProperty('polluted');
}

afterAll(expectUnpolluted);

// ---- the properties ----------------------------------------------------------

describe('fuzz: wire forms on arbitrary JSON', () => {
  it('decodeExecResult: mutated valid results give a valid result or InvalidArgument', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'decodeExecResult(mutated)',
      fc.property(mutated(validResult, RESULT_KEYS), (text) => {
        decodesExecResult(wire(text));
        expectUnpolluted();
      }),
      150,
    );
  });

  it('decodeExecResult: valid results round-trip', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'decodeExecResult(valid)',
      fc.property(validResult, (json) => {
        const result = outcome(() => decodeExecResult(wire(JSON.stringify(json))));
        expect(result.ok).toBe(true);
        decodesExecResult(json);
      }),
      200,
    );
  });

  it('decodeExecResult: arbitrary JSON gives a valid result or InvalidArgument', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'decodeExecResult(arbitrary)',
      fc.property(topLevelText, (text) => {
        decodesExecResult(wire(text));
        expectUnpolluted();
      }),
      150,
    );
  });

  it('decodeOutputChunk: mutated valid chunks give a valid chunk or InvalidArgument', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'decodeOutputChunk(mutated)',
      fc.property(mutated(validChunk, CHUNK_KEYS), (text) => {
        decodesOutputChunk(wire(text));
        expectUnpolluted();
      }),
      150,
    );
  });

  it('decodeOutputChunk: arbitrary JSON and arbitrary JavaScript values give a valid chunk or InvalidArgument', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'decodeOutputChunk(arbitrary)',
      fc.property(fc.oneof(topLevelText.map(wire), fc.anything({ withNullPrototype: true, withBoxedValues: true, withTypedArray: true, withSparseArray: true, withMap: true, withBigInt: true, key: anyKey(CHUNK_KEYS) })), (value) => {
        decodesOutputChunk(value);
        decodesExecResult(value);
        expectUnpolluted();
      }),
      150,
    );
  });

  it('decoders: a refusal names at most a bounded number of problems, however many the input has', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'decoder messages (many unknown keys)',
      fc.property(fc.integer({ min: 1, max: 60_000 }), fc.constantFrom('result', 'chunk'), (count, what) => {
        const base: Record<string, unknown> = what === 'result' ? { exitCode: 0, signal: null, stdout: '', stderr: '', streamed: false, timedOut: false, stdoutTruncated: false, stderrTruncated: false, durationMs: 1 } : { stream: 'stdout', data: '' };
        for (let index = 0; index < count; index++) base[`k${index}`] = index;
        const result = outcome(() => (what === 'result' ? decodeExecResult(base) : decodeOutputChunk(base)));
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.error.message.length, 'message length').toBeLessThan(4_096);
      }),
      25,
    );
  });

  it('validatorFor: every definition answers a boolean with issues, never throws', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    const names = Object.keys(DEFINITIONS) as DefinitionName[];
    check(
      'validatorFor(every definition)',
      fc.property(fc.constantFrom(...names), fc.constantFrom<'exact' | 'reader'>('exact', 'reader'), topLevelText, (name, document, text) => {
        const validate = validatorFor(name, { document });
        const ok = validate(wire(text));
        expect(typeof ok).toBe('boolean');
        expect(Array.isArray(validate.issues)).toBe(true);
        expect(validate.issues.length === 0).toBe(ok);
        expectUnpolluted();
      }),
      120,
    );
  });
});

// ---- option validation ---------------------------------------------------------

/** What the spec accepts as argv; an index loop, since a sparse array's holes are elements too. */
function argvValid(argv: unknown): boolean {
  if (!Array.isArray(argv) || argv.length === 0 || argv[0] === '') return false;
  for (let index = 0; index < argv.length; index++) {
    const item: unknown = argv[index];
    if (typeof item !== 'string' || item.includes('\0')) return false;
  }
  return true;
}

describe('fuzz: option validation on arbitrary values', () => {
  it('planRun and planStream return a plan or throw InvalidArgument, never another error', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'planRun/planStream',
      fc.property(anyArgv, anyOptions, (argv, options) => {
        for (const plan of [planRun, planStream]) {
          const result = outcome(() => plan(argv as string[], options as never));
          if (result.ok) {
            // Accepted values are what the spec allows.
            const timeout = result.value.timeout;
            if (timeout !== undefined) expect(Number.isFinite(timeout) && timeout > 0).toBe(true);
            expect(Object.isFrozen(result.value.command.argv)).toBe(true);
            expect(Object.isFrozen(result.value.command.env)).toBe(true);
          } else if (!argvValid(argv)) {
            // argv is checked before the options.
            expect(result.error.key).toMatch(/^argv/);
          } else {
            expect(result.error.key).toMatch(/^options/);
          }
        }
        expectUnpolluted();
      }),
      400,
    );
  });

  it('timeouts: only a finite number > 0 is accepted', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'options.timeout',
      fc.property(anyValue, (timeout) => {
        const result = outcome(() => planRun(['true'], { timeout } as never));
        const valid = timeout === undefined || (typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0);
        expect(result.ok).toBe(valid);
        if (!result.ok) expect(result.error.key).toBe('options.timeout');
      }),
      300,
    );
  });

  it('validateArgv and validateEnv accept exactly what the spec allows', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'validateArgv/validateEnv',
      fc.property(anyArgv, fc.dictionary(anyKey(['PATH', 'A=B', '']), fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), anyValue), { maxKeys: 4 }), (argv, env) => {
        const argvResult = outcome(() => validateArgv(argv));
        expect(argvResult.ok).toBe(argvValid(argv));
        if (argvResult.ok) expect(argvResult.value).toEqual(argv);
        const envResult = outcome(() => validateEnv(env));
        const envValid = Object.entries(env).every(([name, value]) => name !== '' && !name.includes('=') && !name.includes('\0') && typeof value === 'string' && !value.includes('\0'));
        expect(envResult.ok).toBe(envValid);
        if (envResult.ok) {
          expect(Object.getOwnPropertyNames(envResult.value).sort()).toEqual(Object.keys(env).sort());
          for (const name of Object.keys(env)) expect(Object.getOwnPropertyDescriptor(envResult.value, name)?.value).toBe(env[name]);
        } else {
          expect(envResult.error.key).toMatch(/^options\.env\./);
        }
        expectUnpolluted();
      }),
      300,
    );
  });
});

describe('fuzz: the helpers a reader of wire objects calls', () => {
  const names = Object.keys(DEFINITIONS);
  it('validatorFor(any name, any options) gives a validator or InvalidArgument', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'validatorFor(arbitrary)',
      fc.property(fc.oneof(fc.constantFrom(...names), anyKey(names), anyValue), fc.oneof(fc.constant(undefined), fc.record({ document: fc.oneof(fc.constantFrom('exact', 'reader', '__proto__', 'toString'), anyValue) }, { requiredKeys: [] }), anyValue), (name, options) => {
        const result = outcome(() => validatorFor(name as DefinitionName, options as never));
        if (result.ok) expect(typeof result.value({})).toBe('boolean');
        expectUnpolluted();
      }),
      300,
    );
  });

  it('hasCapability(any manifest, any name) answers a boolean', { timeout: PROPERTY_TIMEOUT_MS }, () => {
    check(
      'hasCapability(arbitrary)',
      fc.property(fc.jsonValue().map((text) => JSON.parse(JSON.stringify({ manifest: text })) as { manifest: unknown }), fc.dictionary(anyKey([...CAPABILITIES]), fc.oneof(fc.boolean(), anyValue), { maxKeys: 6 }), fc.oneof(fc.constantFrom(...CAPABILITIES), anyKey([...CAPABILITIES])), (wrapped, manifest, name) => {
        for (const candidate of [manifest, typeof wrapped.manifest === 'object' && wrapped.manifest !== null ? wrapped.manifest : {}]) {
          const answer = hasCapability(candidate as never, name as never);
          expect(typeof answer).toBe('boolean');
          const own = Object.hasOwn(candidate, name) ? (candidate as Record<string, unknown>)[name] : undefined;
          if (typeof own === 'boolean') expect(answer).toBe(own);
          else expect(answer).toBe(name === 'binary-output');
        }
      }),
      300,
    );
  });
});

describe('regressions found by fuzzing', () => {
  it('hasCapability answers false, not what Object.prototype holds, for toString, constructor and __proto__', () => {
    for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      expect(hasCapability({ streaming: true, stdin: true, 'resource-limits': false, user: false }, name as never), name).toBe(false);
    }
    expect(hasCapability(JSON.parse('{"toString": true}') as never, 'toString' as never)).toBe(true);
  });

  it('validatorFor with a Symbol as the name is InvalidArgument, not a TypeError (found by seed 5922049, validatorFor(arbitrary), path 98)', () => {
    const result = outcome(() => validatorFor(Symbol('s') as never));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.key).toBe('name');
  });

  it('validatorFor with options null is InvalidArgument, not a TypeError', () => {
    const result = outcome(() => validatorFor('ExecResult', null as never));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.key).toBe('options');
  });

  it('a result with 2 938 unknown keys is refused with a message naming ten problems and counting the rest (found by seed 5922049, decoder messages, path 0)', () => {
    const json: Record<string, unknown> = { exitCode: 0, signal: null, stdout: '', stderr: '', streamed: false, timedOut: false, stdoutTruncated: false, stderrTruncated: false, durationMs: 1 };
    for (let index = 0; index < 2_938; index++) json[`k${index}`] = index;
    const result = outcome(() => decodeExecResult(json));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.key).toBe('result');
    expect(result.error.reason.split('; ')).toHaveLength(11);
    expect(result.error.reason).toMatch(/; and 2928 more$/);
    expect(result.error.message.length).toBeLessThan(1_000);
  });
});
