// The generators of the fuzz: strings as callers write them, env and cwd
// options, programs, and the options bag with the verdict each value calls for.
import fc from 'fast-check';
import { hasCapability, type CapabilityManifest } from '@sandstream/types';

const encoder = new TextEncoder();

/** The two calls a case can make. */
export type Mode = 'run' | 'stream';

/** One option of the options property: key, value, verdict, and for a piped stdin the writes. */
export type OptionField = readonly [key: string, value: unknown, verdict: string, writes?: ReadonlyArray<string | Uint8Array>];

/** The program of an argv case. */
export type Program = { readonly kind: 'sh' } | { readonly kind: 'empty' } | { readonly kind: 'missing'; readonly name: string };

/** The cwd of a cwd case. */
export type CwdCase =
  | { readonly kind: 'absent' | 'file' | 'below-file' }
  | { readonly kind: 'dir'; readonly name: string; readonly spelling: string }
  | { readonly kind: 'link' | 'missing' | 'dangling'; readonly name: string }
  | { readonly kind: 'invalid'; readonly value: unknown };

const SPECIAL = [
  '', ' ', '\n', '\r\n', '\t', "'", '"', '\\', '$HOME', '$(id)', '`id`', '*', '?', '~', '-n', '-e', '--', '-', '%s', '%',
  '\u00e9', '\u65e5\u672c', '\u{1F600}', '\u{10FFFF}', '\uFEFF', '\u202E', '\u2028', '\u0085', '\x1b[31m', '\x7f', '\x01',
  '\ud800', '\udfff', 'a\ud800b', '\udc00\ud800',
];

/** Strings as a caller may write them: any code points but NUL, graphemes, shell metacharacters, lone surrogates. */
export const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL) },
  { weight: 2, arbitrary: fc.array(fc.constantFrom(...SPECIAL), { maxLength: 5 }).map((parts) => parts.join('')) },
  { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 1, max: 0xffff }).map((code) => String.fromCharCode(code)), maxLength: 12 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('x', '\u00e9', '\u{1F600}'), fc.integer({ min: 200, max: 2_000 })).map(([unit, count]) => unit.repeat(count)) },
).map((value) => value.replaceAll('\0', ''));

/** Mostly valid text, now and then with a NUL, which no exec call can carry. */
export const textMaybeNul: fc.Arbitrary<string> = fc.oneof(
  { weight: 30, arbitrary: text },
  { weight: 1, arbitrary: fc.tuple(text, text).map(([a, b]) => `${a}\0${b}`) },
);

/**
 * Not fuzzed: what the echo itself depends on (the program search path, the
 * dynamic linker, the variables that change how sh parses its script: dash
 * refuses to start on a non-numeric OPTIND), and the marker space.
 */
const SHELL_VARIABLES = new Set(['PATH', 'ENV', 'BASH_ENV', 'IFS', 'OPTIND', 'OPTARG', 'CDPATH', 'POSIXLY_CORRECT']);
function reservedName(name: string): boolean {
  return SHELL_VARIABLES.has(name) || name.startsWith('LD_') || name.startsWith('SANDSTREAM_');
}

const validName = fc
  .oneof(
    { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'A B', '1A', 'a.b', '-x', 'lower', '\u00e9',
        '\u00c5\u00c4\u00d6', '\u{1F600}', '\ud800', 'PWD', 'OLDPWD', 'SHLVL', '_', 'HOME', 'PS1', 'PPID', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR',
      ),
    },
    { weight: 1, arbitrary: text.filter((name) => name !== '') },
  )
  .filter((name) => !name.includes('=') && !name.includes('\0') && !reservedName(name.toWellFormed()));

const invalidEntry = fc.oneof(
  fc.tuple(fc.constantFrom('', '=', 'A=B', '=A', 'A\0B', '\0'), fc.string()),
  fc.tuple(validName, fc.constantFrom(1, null, undefined, true, {}, [], 'a\0b', '\0')),
);

/**
 * An env option: entries with distinct names (also once lone surrogates are
 * replaced), now and then an invalid entry, now and then not an object.
 */
export const envOption: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(fc.uniqueArray(fc.tuple(validName, textMaybeNul), { maxLength: 5, selector: ([name]) => name.toWellFormed() }), fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: invalidEntry }), fc.boolean()).map(([entries, bad, nullPrototype]) => {
    const env: Record<string, unknown> = nullPrototype ? (Object.create(null) as Record<string, unknown>) : {};
    for (const [name, value] of bad === null ? entries : [...entries, bad]) {
      Object.defineProperty(env, name, { value, enumerable: true, writable: true, configurable: true });
    }
    return env;
  }) },
  { weight: 1, arbitrary: fc.constantFrom('A=B', 1, null, [], [['A', 'B']], new Map([['A', 'B']]), () => ({})) },
);

/** A program: the shell (the echo runs), an empty name, or one that does not exist. */
export const program: fc.Arbitrary<Program> = fc.oneof(
  { weight: 12, arbitrary: fc.constant({ kind: 'sh' } as const) },
  { weight: 1, arbitrary: fc.constant({ kind: 'empty' } as const) },
  { weight: 2, arbitrary: textMaybeNul.map((name) => ({ kind: 'missing' as const, name: `sandstream-no-such-program-${name}` })) },
);

/** A directory name (no `/`, no NUL, not `.` or `..`), short enough in UTF-8 for any file system. */
export const dirName: fc.Arbitrary<string> = text
  .map((name) => name.replaceAll('/', '_').replaceAll('\0', '_').slice(0, 40))
  .filter((name) => name !== '' && name !== '.' && name !== '..' && encoder.encode(name).byteLength <= 200);

export const cwdOption: fc.Arbitrary<CwdCase> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'absent' } as const) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('dir' as const), name: dirName, spelling: fc.constantFrom('', '', '/', '/.', '//', '/../' ) }) },
  { weight: 2, arbitrary: dirName.map((name) => ({ kind: 'link' as const, name })) },
  { weight: 2, arbitrary: dirName.map((name) => ({ kind: 'missing' as const, name })) },
  { weight: 1, arbitrary: dirName.map((name) => ({ kind: 'dangling' as const, name })) },
  { weight: 2, arbitrary: fc.constantFrom<CwdCase>({ kind: 'file' }, { kind: 'below-file' }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'a\0b', 1, null, {}, ['/'], true).map((value) => ({ kind: 'invalid' as const, value })) },
);

const OTHER_VALUE = fc.constantFrom<unknown>(undefined, null, 0, 1, '', 'x', true, {}, [], NaN);

/**
 * One option of the options property: [key, value, verdict], the verdict
 * `invalid`, `ok` or what a valid value makes happen (`short` timeout,
 * `aborted` signal, output `cap`, `pipe`, `needs-stdin`). Valid options
 * come four times as often as invalid ones, so that most cases run.
 */
export function optionFields(mode: Mode, capabilities: CapabilityManifest): fc.Arbitrary<OptionField> {
  const stdinCapable = hasCapability(capabilities, 'stdin');
  const valid: fc.Arbitrary<OptionField>[] = [
    fc.constantFrom(60_000, 600_000, 2 ** 31, 2 ** 40, 1e300, Number.MAX_VALUE, undefined).map((v) => ['timeout', v, 'ok']),
    fc.oneof(fc.double({ min: 0.001, max: 50, noNaN: true }), fc.constantFrom(Number.MIN_VALUE, 1, 5)).map((v) => ['timeout', v, 'short']),
    fc.constant(null).map(() => ['signal', new AbortController().signal, 'ok']),
    fc.constant(null).map(() => ['signal', AbortSignal.abort(new Error('fuzz')), 'aborted']),
    fc
      .oneof(text, fc.uint8Array({ maxLength: 64 }), fc.constant(Uint8Array.from({ length: 256 }, (_, i) => i)), fc.integer({ min: 1, max: 300_000 }).map((n) => new Uint8Array(n).fill(0xff)))
      .map((v) => ['input', v, stdinCapable ? 'ok' : 'needs-stdin']),
    // Limits generous enough for the echo: it runs where the capability is, is refused where it is not.
    fc
      .record({ cpuSeconds: fc.constantFrom(60, 3600), addressSpaceBytes: fc.constantFrom(2 ** 34, 2 ** 40), fileSizeBytes: fc.constantFrom(2 ** 30, 2 ** 40), openFiles: fc.constantFrom(256, 4096) }, { requiredKeys: [] })
      .map((v) => ['limits', v, hasCapability(capabilities, 'resource-limits') ? 'ok' : 'needs-resource-limits']),
    // An account no system has: refused before the start (InvalidArgument) or at it (SpawnFailed), never run as someone else.
    fc.constant(['user', 'sandstream-no-such-user', hasCapability(capabilities, 'user') ? 'unknown-user' : 'needs-user']),
  ];
  const invalid: fc.Arbitrary<OptionField>[] = [
    fc.constantFrom(0, -0, -1, -1e-9, NaN, Infinity, -Infinity, '100', null, true, {}, [], 10n).map((v) => ['timeout', v, 'invalid']),
    fc.constantFrom({}, { aborted: false }, 'x', 1, null).map((v) => ['signal', v, 'invalid']),
    fc.constantFrom(1, [], {}, null, [1, 2], new ArrayBuffer(2)).map((v) => ['input', v, 'invalid']),
    fc.constantFrom('x', 1, null, [], { cpuSeconds: -1 }, { cpuSeconds: 1.5 }, { unknown: 1 }, { openFiles: NaN }, { __proto__: null, fileSizeBytes: '1' }).map((v) => ['limits', v, 'invalid']),
    fc.constantFrom('', 'a\0b', 1, null, {}, []).map((v) => ['user', v, 'invalid']),
    fc
      .tuple(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'Timeout', 'env ', 'stdin', 'maxOutputBytes', 'onOutput')), OTHER_VALUE)
      .filter(([key]) => !KNOWN[mode].has(key))
      .map(([key, v]) => [key, v, 'invalid']),
  ];
  if (mode === 'run') {
    valid.push(
      fc.constantFrom(1 << 20, 64 << 20, Number.MAX_SAFE_INTEGER).map((v) => ['maxOutputBytes', v, 'ok']),
      fc.integer({ min: 0, max: 64 }).map((v) => ['maxOutputBytes', v, 'cap']),
      fc.constant(['onOutput', 'collect', 'ok']),
    );
    invalid.push(
      fc.constantFrom(-1, 1.5, NaN, Infinity, '10', null, 2 ** 53).map((v) => ['maxOutputBytes', v, 'invalid']),
      fc.constantFrom('x', {}, 1, null).map((v) => ['onOutput', v, 'invalid']),
    );
  } else {
    // With a writer: up to five writes (text, bytes, all 256 byte values, 200 kB), all in flight at once, then end().
    const write = fc.oneof(text, fc.uint8Array({ maxLength: 100 }), fc.constant(Uint8Array.from({ length: 256 }, (_, i) => i)), fc.constant(new Uint8Array(200_000).fill(0x5a)));
    valid.push(
      fc.constant(['stdin', 'ignore', 'ok']),
      fc.array(write, { maxLength: 5 }).map((writes) => ['stdin', 'pipe', stdinCapable ? 'pipe' : 'needs-stdin', writes]),
    );
    invalid.push(fc.constantFrom('inherit', 'PIPE', 1, null, true).map((v) => ['stdin', v, 'invalid']));
  }
  return fc.oneof({ weight: 4, arbitrary: fc.oneof(...valid) }, { weight: 1, arbitrary: fc.oneof(...invalid) });
}

const COMMON_KEYS = ['timeout', 'env', 'cwd', 'signal', 'limits', 'user', 'input'];
const KNOWN: Record<Mode, Set<string>> = {
  run: new Set([...COMMON_KEYS, 'maxOutputBytes', 'onOutput']),
  stream: new Set([...COMMON_KEYS, 'stdin']),
};

/** Keys of the invalid entries of an env option, or undefined when it is valid. */
export function invalidEnvKeys(env: unknown): string[] | undefined {
  if (env === null || typeof env !== 'object' || Array.isArray(env) || ![Object.prototype, null].includes(Object.getPrototypeOf(env))) return ['options.env'];
  const keys = Object.entries(env as Record<string, unknown>)
    .filter(([name, value]) => name === '' || name.includes('=') || name.includes('\0') || typeof value !== 'string' || value.includes('\0'))
    .map(([name]) => `options.env.${name}`);
  return keys.length === 0 ? undefined : keys;
}

/** The entries of a valid env option; none of an invalid one. */
export function validEnvEntries(env: unknown): Record<string, string> {
  return invalidEnvKeys(env) === undefined ? (Object.fromEntries(Object.entries(env as Record<string, string>)) as Record<string, string>) : {};
}

