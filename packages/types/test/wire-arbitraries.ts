/**
 * The inputs of the wire and option fuzzing (test/fuzz-wire.test.ts): keys
 * as a wire may carry them (prototype names included), valid ExecResult and
 * OutputChunk wire objects and mutations of them, awkward JSON texts (deep
 * nesting, huge strings), and values and option bags of every type.
 */
import fc from 'fast-check';

// ---- wire objects -----------------------------------------------------------

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'] as const;
export const RESULT_KEYS = ['exitCode', 'signal', 'stdout', 'stderr', 'streamed', 'timedOut', 'stdoutTruncated', 'stderrTruncated', 'durationMs'] as const;
export const CHUNK_KEYS = ['stream', 'data'] as const;

/** Keys as a wire may carry them: the schema's own, prototype names, anything. */
export const anyKey = (own: readonly string[]): fc.Arbitrary<string> =>
  fc.oneof(fc.constantFrom(...own), fc.constantFrom(...PROTOTYPE_KEYS), fc.string({ unit: 'binary', maxLength: 12 }));

const bytes = fc.uint8Array({ maxLength: 64 });
const base64 = bytes.map((data) => Buffer.from(data).toString('base64'));

/** A valid ExecResult wire object, the schema's invariants kept. */
export const validResult = fc
  .record({
    exitCode: fc.option(fc.integer({ min: 0, max: 255 }), { nil: null }),
    signal: fc.option(fc.constantFrom('SIGKILL', 'SIGTERM', 'SIGXCPU', 'SIG1'), { nil: null }),
    stdout: base64,
    stderr: base64,
    streamed: fc.boolean(),
    timedOut: fc.boolean(),
    stdoutTruncated: fc.boolean(),
    stderrTruncated: fc.boolean(),
    durationMs: fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e9, noNaN: true })),
  })
  .map((r) => ({
    ...r,
    exitCode: r.signal === null ? r.exitCode : null,
    ...(r.streamed ? { stdout: '', stderr: '', stdoutTruncated: false, stderrTruncated: false } : {}),
  }));

export const validChunk = fc.record({ stream: fc.constantFrom('stdout', 'stderr'), data: base64 });

/** JSON text nesting `depth` arrays or objects around a leaf. */
function nested(depth: number, kind: 'array' | 'object', leaf: string): string {
  return kind === 'array' ? `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`;
}

/** A JSON text of awkward values: deep nesting, huge strings, prototype-keyed objects. */
const awkwardValueText: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value) ?? 'null'),
  fc.tuple(fc.integer({ min: 100, max: 10_000 }), fc.constantFrom<'array' | 'object'>('array', 'object'), fc.constantFrom('null', '1', '"x"', '{}'))
    .map(([depth, kind, leaf]) => nested(depth, kind, leaf)),
  // Huge strings: base64-looking (reaching the pattern), and not.
  fc.tuple(fc.integer({ min: 1 << 16, max: 4 << 20 }), fc.constantFrom('A', 'AAA=', '=', '\u00e9', ' ', '\\u0000'))
    .map(([length, unit]) => JSON.stringify(unit.startsWith('\\') ? '\0'.repeat(length) : unit.repeat(Math.ceil(length / unit.length)))),
  fc.tuple(fc.constantFrom(...PROTOTYPE_KEYS), fc.jsonValue({ maxDepth: 2 })).map(([key, value]) => `{${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'}}`),
  fc.constantFrom('1e400', '1e-400', '-0', '-1', '256', '1.5', 'true', '""', '[]', '{}', '"SIGKILL"', '"stdout"'),
);

/** A valid wire object with one to three fields replaced, removed or added; serialised as text. */
export function mutated(valid: fc.Arbitrary<Record<string, unknown>>, own: readonly string[]): fc.Arbitrary<string> {
  const edit = fc.tuple(fc.constantFrom('replace', 'remove', 'add'), anyKey(own), awkwardValueText);
  return fc.tuple(valid, fc.array(edit, { minLength: 1, maxLength: 3 })).map(([base, edits]) => {
    // Built as text so that `__proto__` lands as an own key, as on a wire.
    const entries = new Map<string, string>(Object.entries(base).map(([key, value]) => [key, JSON.stringify(value)]));
    for (const [kind, key, value] of edits) {
      if (kind === 'remove') entries.delete(key);
      else entries.set(key, value);
    }
    return `{${[...entries].map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;
  });
}

export const topLevelText: fc.Arbitrary<string> = fc.oneof(
  awkwardValueText,
  fc.jsonValue().map((value) => JSON.stringify(value) ?? 'null'),
  fc.tuple(fc.integer({ min: 1_000, max: 10_000 }), fc.constantFrom<'array' | 'object'>('array', 'object')).map(([depth, kind]) => nested(depth, kind, '1')),
);

// ---- option values ----------------------------------------------------------

const OPTION_KEYS = ['timeout', 'env', 'cwd', 'signal', 'limits', 'user', 'input', 'stdin', 'maxOutputBytes', 'onOutput'] as const;

/** Values of every type, the awkward numbers included. */
export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(NaN, Infinity, -Infinity, -0, 0, -1, 1.5, 2 ** 53, -(2 ** 53), Number.MAX_VALUE, Number.MIN_VALUE, 1e-300),
  fc.constantFrom('', '\0', 'pipe', 'ignore', '100', '__proto__', null, undefined, true, false),
  fc.double(),
  fc.integer(),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constant(new AbortController().signal),
  fc.constant(() => undefined),
  fc.constant(Symbol('s')),
  fc.bigInt(),
  fc.uint8Array({ maxLength: 4 }),
  fc.anything({ maxDepth: 2, withNullPrototype: true, withBoxedValues: true, withBigInt: true, withMap: true, withSet: true, withSparseArray: true, key: anyKey(OPTION_KEYS) }),
);

/** An options bag: known and unknown keys (prototype names included, as own keys) with values of any type. */
export const anyOptions: fc.Arbitrary<unknown> = fc.oneof(
  fc.array(fc.tuple(anyKey(OPTION_KEYS), anyValue), { maxLength: 4 }).chain((entries) =>
    fc.boolean().map((nullPrototype) => {
      const bag = nullPrototype ? (Object.create(null) as Record<string, unknown>) : {};
      for (const [key, value] of entries) Object.defineProperty(bag, key, { value, enumerable: true, writable: true, configurable: true });
      return bag;
    }),
  ),
  anyValue,
);

export const anyArgv: fc.Arbitrary<unknown> = fc.oneof(
  fc.array(fc.string({ unit: 'binary', maxLength: 8 }), { maxLength: 4 }),
  fc.array(anyValue, { maxLength: 3 }),
  fc.constant(['true']),
  anyValue,
);

