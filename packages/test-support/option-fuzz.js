// Property-based fuzzing of what a caller hands a sandbox: argv, env, cwd,
// standard input and the options bag, with fast-check, one suite every
// adapter runs. Each input either runs with an exact round trip (the
// command echoes its argv, its environment, its working directory and its
// standard input back, hex-encoded so that a text-only backend carries them
// exactly too) or fails with the spec's typed error, within a bound, and
// leaves no process of its own behind.
//
// Strings are JavaScript strings: one with a lone surrogate has no UTF-8
// form, and reaches the command as its UTF-8 encoding in the WHATWG sense
// (each lone surrogate becomes U+FFFD), as a string given as `input` or to
// `write()` does. The expected echo is computed that way.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AbortError,
  CapabilityNotSupported,
  hasCapability,
  InvalidArgument,
  SpawnFailed,
  StdinClosed,
} from '@sandstream/types';
import { markedProcesses } from './processes.js';
import { within } from './timing.js';

const encoder = new TextEncoder();

/**
 * The seed and run count of one property: the fixed defaults, unless
 * SANDSTREAM_FUZZ_SEED / SANDSTREAM_FUZZ_RUNS say otherwise. Shrinking is
 * off unless SANDSTREAM_FUZZ_SHRINK=1, so that a failure in `npm test`
 * reports at once (with the seed and path that reproduce it).
 */
export function fuzzSettings(defaultRuns, defaultSeed = 0x5a_5d_02) {
  const seed = process.env.SANDSTREAM_FUZZ_SEED === undefined ? defaultSeed : Number(process.env.SANDSTREAM_FUZZ_SEED);
  const numRuns = process.env.SANDSTREAM_FUZZ_RUNS === undefined ? defaultRuns : Number(process.env.SANDSTREAM_FUZZ_RUNS);
  return { seed, numRuns, endOnFailure: process.env.SANDSTREAM_FUZZ_SHRINK !== '1' };
}

// ---- the echo command --------------------------------------------------------

/**
 * `sh -c ECHO sh args...`: `$0` and its arguments NUL-terminated, its own initial
 * environment (as exec'd, before the shell touched anything), its
 * physical working directory and what it reads on standard input, each as
 * `od` hex, separated by `@` lines.
 */
const ECHO = 'printf "%s\\0" "$0" "$@" | od -An -v -tx1; echo @; od -An -v -tx1 < /proc/$$/environ; echo @; pwd -P | od -An -v -tx1; echo @; od -An -v -tx1';

function hex(bytes) {
  return Buffer.from(bytes).toString('hex');
}

/** What the command must see of a string: its UTF-8 encoding, each lone surrogate as U+FFFD. */
function utf8Hex(text) {
  return hex(encoder.encode(text));
}

function parseEcho(stdout) {
  const sections = stdout.split('@\n');
  if (sections.length !== 4) return undefined;
  const [argvHex, environHex, cwdHex, stdinHex] = sections.map((section) => section.replace(/\s+/g, ''));
  // $0 comes first, so that no arguments and one empty argument differ.
  const args = argvHex.split(/(?<=^(?:..)*)00/).slice(1, -1);
  const environ = Buffer.from(environHex, 'hex');
  const env = new Map();
  let start = 0;
  for (let index = 0; index <= environ.length; index++) {
    if (index < environ.length && environ[index] !== 0) continue;
    if (index > start) {
      const entry = environ.subarray(start, index);
      const equals = entry.indexOf(0x3d, 1);
      const name = hex(equals < 0 ? entry : entry.subarray(0, equals));
      const list = env.get(name) ?? [];
      list.push(equals < 0 ? undefined : hex(entry.subarray(equals + 1)));
      env.set(name, list);
    }
    start = index + 1;
  }
  return { args, env, cwd: cwdHex, stdin: stdinHex };
}

// ---- generators --------------------------------------------------------------

const SPECIAL = [
  '', ' ', '\n', '\r\n', '\t', "'", '"', '\\', '$HOME', '$(id)', '`id`', '*', '?', '~', '-n', '-e', '--', '-', '%s', '%',
  '\u00e9', '\u65e5\u672c', '\u{1F600}', '\u{10FFFF}', '\uFEFF', '\u202E', '\u2028', '\u0085', '\x1b[31m', '\x7f', '\x01',
  '\ud800', '\udfff', 'a\ud800b', '\udc00\ud800',
];

/** Strings as a caller may write them: any code points but NUL, graphemes, shell metacharacters, lone surrogates. */
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL) },
  { weight: 2, arbitrary: fc.array(fc.constantFrom(...SPECIAL), { maxLength: 5 }).map((parts) => parts.join('')) },
  { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 1, max: 0xffff }).map((code) => String.fromCharCode(code)), maxLength: 12 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('x', '\u00e9', '\u{1F600}'), fc.integer({ min: 200, max: 2_000 })).map(([unit, count]) => unit.repeat(count)) },
).map((value) => value.replaceAll('\0', ''));

/** Mostly valid text, now and then with a NUL, which no exec call can carry. */
const textMaybeNul = fc.oneof(
  { weight: 30, arbitrary: text },
  { weight: 1, arbitrary: fc.tuple(text, text).map(([a, b]) => `${a}\0${b}`) },
);

/**
 * Not fuzzed: what the echo itself depends on (the program search path, the
 * dynamic linker, the variables that change how sh parses its script: dash
 * refuses to start on a non-numeric OPTIND), and the marker space.
 */
const SHELL_VARIABLES = new Set(['PATH', 'ENV', 'BASH_ENV', 'IFS', 'OPTIND', 'OPTARG', 'CDPATH', 'POSIXLY_CORRECT']);
function reservedName(name) {
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
const envOption = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(fc.uniqueArray(fc.tuple(validName, textMaybeNul), { maxLength: 5, selector: ([name]) => name.toWellFormed() }), fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: invalidEntry }), fc.boolean()).map(([entries, bad, nullPrototype]) => {
    const env = nullPrototype ? Object.create(null) : {};
    for (const [name, value] of bad === null ? entries : [...entries, bad]) {
      Object.defineProperty(env, name, { value, enumerable: true, writable: true, configurable: true });
    }
    return env;
  }) },
  { weight: 1, arbitrary: fc.constantFrom('A=B', 1, null, [], [['A', 'B']], new Map([['A', 'B']]), () => ({})) },
);

/** A program: the shell (the echo runs), an empty name, or one that does not exist. */
const program = fc.oneof(
  { weight: 12, arbitrary: fc.constant({ kind: 'sh' }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'empty' }) },
  { weight: 2, arbitrary: textMaybeNul.map((name) => ({ kind: 'missing', name: `sandstream-no-such-program-${name}` })) },
);

/** A directory name (no `/`, no NUL, not `.` or `..`), short enough in UTF-8 for any file system. */
const dirName = text
  .map((name) => name.replaceAll('/', '_').replaceAll('\0', '_').slice(0, 40))
  .filter((name) => name !== '' && name !== '.' && name !== '..' && encoder.encode(name).byteLength <= 200);

const cwdOption = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'absent' }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('dir'), name: dirName, spelling: fc.constantFrom('', '', '/', '/.', '//', '/../' ) }) },
  { weight: 2, arbitrary: dirName.map((name) => ({ kind: 'link', name })) },
  { weight: 2, arbitrary: dirName.map((name) => ({ kind: 'missing', name })) },
  { weight: 1, arbitrary: dirName.map((name) => ({ kind: 'dangling', name })) },
  { weight: 2, arbitrary: fc.constantFrom({ kind: 'file' }, { kind: 'below-file' }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'a\0b', 1, null, {}, ['/'], true).map((value) => ({ kind: 'invalid', value })) },
);

const OTHER_VALUE = fc.constantFrom(undefined, null, 0, 1, '', 'x', true, {}, [], NaN);

/**
 * One option of the options property: [key, value, verdict], the verdict
 * `invalid`, `ok` or what a valid value makes happen (`short` timeout,
 * `aborted` signal, output `cap`, `pipe`, `needs-stdin`). Valid options
 * come four times as often as invalid ones, so that most cases run.
 */
function optionFields(mode, capabilities) {
  const stdinCapable = hasCapability(capabilities, 'stdin');
  const valid = [
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
  const invalid = [
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
const KNOWN = {
  run: new Set([...COMMON_KEYS, 'maxOutputBytes', 'onOutput']),
  stream: new Set([...COMMON_KEYS, 'stdin']),
};

// ---- running one case ---------------------------------------------------------

/** Settles the call the way the spec says its errors arrive: a Process's synchronously, a run's as a rejection. */
async function call(sandbox, mode, argv, options, boundMs, writes = []) {
  if (mode === 'run') {
    let promise;
    try {
      promise = sandbox.run(argv, options);
    } catch (error) {
      return { thrownSynchronously: true, error };
    }
    try {
      const result = await within(boundMs, promise, 'run()');
      return { result, stdout: result.stdout };
    } catch (error) {
      return { error };
    }
  }
  let proc;
  try {
    proc = sandbox.stream(argv, options);
  } catch (error) {
    return { error, synchronous: true };
  }
  // A write to a command that never started, or has ended, rejects with StdinClosed; what the
  // call gives is then decided by iteration and wait(), as the spec puts it.
  let writeErrors = [];
  let outcome;
  try {
    if (options?.stdin === 'pipe') {
      // Not awaited one by one: the writes reach the command in call order however many are in flight.
      const pending = [...writes.map((data) => proc.stdin.write(data)), proc.stdin.end()];
      const settled = await within(boundMs, Promise.allSettled(pending), 'stdin writes');
      writeErrors = settled.filter((entry) => entry.status === 'rejected').map((entry) => entry.reason);
    }
    const parts = [];
    await within(
      boundMs,
      (async () => {
        for await (const chunk of proc) if (chunk.stream === 'stdout') parts.push(chunk.data);
      })(),
      'iteration',
    );
    const result = await within(boundMs, proc.wait(), 'wait()');
    outcome = { result, stdout: Buffer.concat(parts), writeErrors };
  } catch (error) {
    outcome = { error, writeErrors };
  }
  // Disposing a settled Process resolves, whatever the command did.
  try {
    await within(boundMs, proc[Symbol.asyncDispose](), 'disposal');
  } catch (error) {
    outcome.disposeError = error;
  }
  return outcome;
}

function describeError(error) {
  return error instanceof Error ? `${error.constructor.name} ${error.code ?? ''}: ${error.message}` : String(error);
}

/**
 * Checks an outcome against the expectation; returns the outcome's class for the tally.
 * `expected`: { invalid: Set<string> } | { capability: string[] } | { aborted } | { unknownUser } | { spawnFails } | { ok, short, cap, env, args, cwdHex }.
 */
function judge(outcome, expected, mode) {
  const { error, result } = outcome;
  if (outcome.disposeError !== undefined) throw new Error(`disposing the settled Process failed: ${describeError(outcome.disposeError)}`, { cause: outcome.disposeError });
  for (const failed of outcome.writeErrors ?? []) {
    expect(failed, `a write rejected with ${describeError(failed)}`).toBeInstanceOf(StdinClosed);
  }
  if (mode === 'run' && outcome.thrownSynchronously) {
    throw new Error(`run() threw synchronously instead of rejecting: ${describeError(error)}`);
  }
  if (expected.invalid !== undefined) {
    expect(error, `expected InvalidArgument naming one of ${[...expected.invalid].join(', ')}`).toBeInstanceOf(InvalidArgument);
    expect(error.code).toBe('INVALID_ARGUMENT');
    // An option's key, or the path to the offending entry inside it (`options.limits.cpuSeconds`).
    const named = [...expected.invalid].some((key) => error.key === key || (key.startsWith('options.') && error.key.startsWith(`${key}.`)));
    expect(named, `InvalidArgument key ${JSON.stringify(error.key)}, expected one of ${JSON.stringify([...expected.invalid])}`).toBe(true);
    if (mode === 'stream') expect(outcome.synchronous, 'stream() throws InvalidArgument synchronously').toBe(true);
    return 'invalid';
  }
  if (expected.capability !== undefined) {
    expect(error, `expected CapabilityNotSupported(${expected.capability.join(' or ')})`).toBeInstanceOf(CapabilityNotSupported);
    expect(expected.capability).toContain(error.capability);
    return 'capability';
  }
  if (expected.unknownUser) {
    if (expected.aborted && error instanceof AbortError) return 'aborted';
    if (error instanceof InvalidArgument) {
      expect(error.key).toBe('options.user');
      if (mode === 'stream') expect(outcome.synchronous, 'stream() throws InvalidArgument synchronously').toBe(true);
      return 'unknown user refused';
    }
    if (expected.short && error === undefined && result?.timedOut) return 'timed out';
    expect(error, `an unknown account: InvalidArgument or SpawnFailed${expected.aborted ? ' (or AbortError)' : ''}, got ${error === undefined ? 'a result' : describeError(error)}`).toBeInstanceOf(SpawnFailed);
    return 'unknown user failed';
  }
  if (expected.aborted) {
    expect(error, 'an already aborted signal: AbortError').toBeInstanceOf(AbortError);
    return 'aborted';
  }
  if (expected.short && (error !== undefined || result?.timedOut)) {
    // A timeout shorter than the command may end it first, a start failure included.
    if (error !== undefined && !(error instanceof SpawnFailed)) throw new Error(`expected a result or SpawnFailed, got ${describeError(error)}`, { cause: error });
    return 'timed out';
  }
  if (expected.spawnFails) {
    expect(error, `expected SpawnFailed, got ${error === undefined ? 'a result' : describeError(error)}`).toBeInstanceOf(SpawnFailed);
    return 'spawn failed';
  }
  if (error !== undefined) throw new Error(`expected the command to run, got ${describeError(error)}`, { cause: error });
  expect(result.timedOut).toBe(false);
  expect(outcome.writeErrors ?? [], 'writes to a command that ran and read them all').toEqual([]);
  const stdoutText = Buffer.from(outcome.stdout).toString('latin1');
  if (expected.cap !== undefined && result.stdoutTruncated) {
    expect(result.stdout.byteLength).toBe(expected.cap);
    return 'capped';
  }
  const echo = parseEcho(stdoutText);
  const diagnosis = `stdout ${JSON.stringify(stdoutText.slice(0, 400))}, stderr ${JSON.stringify(Buffer.from(result.stderr).toString('utf8').slice(0, 400))}`;
  expect(result.exitCode, diagnosis).toBe(0);
  expect(echo, diagnosis).toBeDefined();
  expect(echo.args, 'argv as the command saw it (hex of the UTF-8)').toEqual(expected.args.map(utf8Hex));
  for (const [name, value] of Object.entries(expected.env)) {
    expect(echo.env.get(utf8Hex(name)), `variable ${JSON.stringify(name)} as the command saw it (hex of the UTF-8)`).toEqual([utf8Hex(value)]);
  }
  if (expected.cwdHex !== undefined) expect(echo.cwd, 'working directory (hex of pwd -P)').toBe(expected.cwdHex);
  // One-shot input, a string as UTF-8; without it, standard input is at end-of-file.
  expect(echo.stdin, 'standard input as the command read it (hex)').toBe(expected.stdinHex ?? '');
  if (expected.collected !== undefined && !result.stdoutTruncated) {
    expect(hex(Buffer.concat(expected.collected)), 'onOutput saw what the result holds').toBe(hex(result.stdout));
  }
  return 'round trip';
}

/** Keys of the invalid entries of an env option, or undefined when it is valid. */
function invalidEnvKeys(env) {
  if (env === null || typeof env !== 'object' || Array.isArray(env) || ![Object.prototype, null].includes(Object.getPrototypeOf(env))) return ['options.env'];
  const keys = Object.entries(env)
    .filter(([name, value]) => name === '' || name.includes('=') || name.includes('\0') || typeof value !== 'string' || value.includes('\0'))
    .map(([name]) => `options.env.${name}`);
  return keys.length === 0 ? undefined : keys;
}

function validEnvEntries(env) {
  return invalidEnvKeys(env) === undefined ? Object.fromEntries(Object.entries(env)) : {};
}

/** Counts a case's outcome, or each of several commands' outcomes. */
function tally(counts, kinds) {
  for (const kind of Array.isArray(kinds) ? kinds : [kinds]) counts[kind] = (counts[kind] ?? 0) + 1;
}

/**
 * Defines the fuzz suite against sandboxes from `openSandbox` (one for each
 * property, closed at its end). `options.marker` ({ name, value }) is a variable
 * every command of the sandbox carries, so that leftovers are found;
 * `options.startCount()` counts the start requests the backend received, so
 * that a rejected call is shown to have started nothing.
 */
export function describeOptionFuzz(name, openSandbox, options = {}) {
  const runs = options.runs ?? 20;
  const boundMs = options.commandBoundMs ?? 30_000;
  // A longer run (SANDSTREAM_FUZZ_RUNS) gets a bound that grows with it: 5 s a run.
  const timeoutMs = Math.max(options.testTimeoutMs ?? 120_000, fuzzSettings(runs).numRuns * 5_000);
  let sandbox;
  let scratch;
  let file;

  describe(`${name}: fuzzed argv, env, cwd and options`, () => {
    beforeAll(() => {
      scratch = realpathSync(mkdtempSync(join(options.scratchParent ?? tmpdir(), '.sandstream-fuzz-')));
      file = join(scratch, 'a-file');
      writeFileSync(file, 'not a directory\n');
    });
    afterAll(() => {
      if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
    });

    /** Runs one case: the call, the verdict, then nothing of it left alive and, when it was refused, nothing started. */
    async function runCase(mode, argv, callOptions, expected, writes) {
      const before = options.startCount?.();
      const outcome = await call(sandbox, mode, argv, callOptions, boundMs, writes);
      const kind = judge(outcome, expected, mode);
      if (before !== undefined && ['invalid', 'capability', 'aborted', 'unknown user refused'].includes(kind)) {
        // Nothing was asked to start, so there is nothing to look for.
        expect(options.startCount(), 'a refused call sent no start request').toBe(before);
        return kind;
      }
      await expectNoLeftovers();
      return kind;
    }

    /** Nothing carrying the marker is alive once the calls have settled (a process on its way out gets a bounded moment). */
    async function expectNoLeftovers() {
      if (options.marker === undefined) return;
      const { name: variable, value } = options.marker;
      const deadline = Date.now() + 10_000;
      while (markedProcesses(variable, value).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(markedProcesses(variable, value).map((p) => `${p.pid} ${p.cmdline}`), 'processes outlived the call').toEqual([]);
    }

    async function property(title, arbitrary, predicate, propertyRuns = runs) {
      const settings = fuzzSettings(propertyRuns, options.seed);
      const counts = {};
      const started = performance.now();
      // A sandbox per property, closed at its end: a test's helpers may close what a test left open.
      sandbox = await openSandbox();
      try {
        await fc.assert(fc.asyncProperty(arbitrary, async (input) => tally(counts, await predicate(input))), settings);
      } finally {
        await sandbox.close();
      }
      const tallied = Object.entries(counts).map(([kind, n]) => `${kind} ${n}`).join(', ');
      console.log(`[fuzz] ${name} ${title}: seed=${settings.seed} runs=${settings.numRuns} ${Math.round(performance.now() - started)} ms (${tallied})`);
    }

    const modes = fc.constantFrom('run', 'stream');

    const huge = fc.oneof({ weight: 20, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('arg', 'env') });
    const argvEnvInput = fc.record({ mode: modes, program, args: fc.array(textMaybeNul, { maxLength: 6 }), env: fc.option(envOption, { freq: 4, nil: undefined }), huge });

    /** One argv+env case: the call to make and what it must give. */
    function argvEnvCase({ mode, program: prog, args, env: given, huge: oversized }) {
      // One string past Linux's limit on a single argument or variable (128 KiB): exec fails with E2BIG.
      const oversize = oversized === 'env' && given !== undefined && invalidEnvKeys(given) !== undefined ? undefined : oversized;
      const allArgs = oversize === 'arg' ? [...args, 'x'.repeat(140_000)] : args;
      const env = oversize === 'env' ? { ...given, SANDSTREAM_FUZZ_HUGE: 'x'.repeat(140_000) } : given;
      const argv = prog.kind === 'sh' ? ['sh', '-c', ECHO, 'sh', ...allArgs] : [prog.kind === 'empty' ? '' : prog.name, ...allArgs];
      const badArgv = argv.flatMap((item, index) => ((index === 0 && item === '') || item.includes('\0') ? [`argv[${index}]`] : []));
      const badEnv = env === undefined ? undefined : invalidEnvKeys(env);
      const expected =
        badArgv.length > 0 ? { invalid: new Set(badArgv) }
        : badEnv !== undefined ? { invalid: new Set(badEnv) }
        : prog.kind === 'missing' || oversize !== undefined ? { spawnFails: true }
        : { args: allArgs, env: env === undefined ? {} : validEnvEntries(env) };
      return { mode, argv, callOptions: env === undefined ? undefined : { env }, expected };
    }

    it('argv and env: an exact round trip or InvalidArgument / SpawnFailed', { timeout: timeoutMs }, async () => {
      await property('argv+env', argvEnvInput, async (input) => {
        const { mode, argv, callOptions, expected } = argvEnvCase(input);
        return runCase(mode, argv, callOptions, expected);
      });
    });

    it('concurrent: up to six fuzzed commands at once on one sandbox each keep their own argv, env and outcome', { timeout: timeoutMs }, async () => {
      await property('concurrent', fc.array(argvEnvInput, { minLength: 2, maxLength: 6 }), async (inputs) => {
        const cases = inputs.map(argvEnvCase);
        const outcomes = await Promise.all(cases.map(({ mode, argv, callOptions }) => call(sandbox, mode, argv, callOptions, boundMs)));
        const kinds = outcomes.map((outcome, index) => judge(outcome, cases[index].expected, cases[index].mode));
        await expectNoLeftovers();
        return kinds;
      }, Math.max(1, Math.round(runs / 3)));
    });

    it('cwd: the directory given (however spelled, or through a symlink), or SpawnFailed when it is missing, a file or a dangling link, or InvalidArgument', { timeout: timeoutMs }, async () => {
      await property('cwd', fc.record({ mode: modes, cwd: cwdOption, args: fc.array(text, { maxLength: 2 }) }), async ({ mode, cwd, args }) => {
        let value;
        let expected = { args, env: {} };
        if (cwd.kind === 'dir') {
          const parent = mkdtempSync(join(scratch, 'd-'));
          const dir = join(parent, cwd.name);
          mkdirSync(dir);
          // The same directory spelled with a trailing slash, `.`, `//` or `x/../x`.
          value = cwd.spelling === '/../' ? `${dir}/../${cwd.name}` : `${dir}${cwd.spelling}`;
          expected = { ...expected, cwdHex: utf8Hex(`${realpathSync(dir)}\n`) };
        } else if (cwd.kind === 'link') {
          const parent = mkdtempSync(join(scratch, 'l-'));
          const dir = join(parent, 'target');
          mkdirSync(dir);
          value = join(parent, cwd.name === 'target' ? 'link' : cwd.name);
          symlinkSync(dir, value);
          expected = { ...expected, cwdHex: utf8Hex(`${realpathSync(dir)}\n`) };
        } else if (cwd.kind === 'missing') {
          value = join(scratch, 'no-such-dir', cwd.name);
          expected = { spawnFails: true };
        } else if (cwd.kind === 'dangling') {
          value = join(mkdtempSync(join(scratch, 'g-')), cwd.name);
          symlinkSync(join(scratch, 'no-such-dir'), value);
          expected = { spawnFails: true };
        } else if (cwd.kind === 'file') {
          value = file;
          expected = { spawnFails: true };
        } else if (cwd.kind === 'below-file') {
          value = join(file, 'x');
          expected = { spawnFails: true };
        } else if (cwd.kind === 'invalid') {
          value = cwd.value;
          expected = { invalid: new Set(['options.cwd']) };
        }
        return runCase(mode, ['sh', '-c', ECHO, 'sh', ...args], cwd.kind === 'absent' ? {} : { cwd: value }, expected);
      });
    });

    it('options: wrong types, odd numbers and unknown keys give InvalidArgument; valid ones run', { timeout: timeoutMs }, async () => {
      const probe = await openSandbox();
      const capabilities = probe.capabilities;
      await probe.close();
      const optionCase = modes.chain((mode) =>
        fc.record({
          mode: fc.constant(mode),
          args: fc.array(text, { maxLength: 3 }),
          fields: fc.uniqueArray(optionFields(mode, capabilities), { maxLength: 4, selector: ([key]) => key }),
          shape: fc.oneof({ weight: 5, arbitrary: fc.constant('plain') }, { weight: 2, arbitrary: fc.constant('null-prototype') }, { weight: 1, arbitrary: fc.constant('not-an-object') }),
          notAnObject: fc.constantFrom(null, 'x', 1, [], new Map(), new (class Options {})(), Object.create({ timeout: 1 })),
        }),
      );
      await property('options', optionCase, async ({ mode, args, fields, shape, notAnObject }) => {
        const collected = [];
        let callOptions = shape === 'null-prototype' ? Object.create(null) : {};
        for (const [key, value] of fields) {
          const actual = key === 'onOutput' && value === 'collect' ? (chunk) => chunk.stream === 'stdout' && collected.push(chunk.data) : value;
          Object.defineProperty(callOptions, key, { value: actual, enumerable: true, writable: true, configurable: true });
        }
        if (shape === 'not-an-object') callOptions = notAnObject;
        const verdicts = new Map(fields.map(([key, , verdict]) => [key, verdict]));
        const verdictValues = [...verdicts.values()];
        const invalid = fields.filter(([, , verdict]) => verdict === 'invalid').map(([key]) => `options.${key}`);
        if (fields.some(([key, value]) => key === 'stdin' && value === 'pipe') && verdicts.has('input') && verdicts.get('input') !== 'invalid') invalid.push('options.input');
        let expected;
        if (shape === 'not-an-object') expected = { invalid: new Set(['options']) };
        else if (invalid.length > 0) expected = { invalid: new Set(invalid) };
        else if (verdictValues.some((verdict) => verdict.startsWith('needs-'))) {
          expected = { capability: verdictValues.filter((verdict) => verdict.startsWith('needs-')).map((verdict) => verdict.slice('needs-'.length)) };
        }
        // Which of an unknown account and an aborted signal is reported first is not specified.
        else if (verdictValues.includes('aborted') || verdictValues.includes('unknown-user')) {
          expected = { aborted: verdictValues.includes('aborted'), unknownUser: verdictValues.includes('unknown-user'), short: verdictValues.includes('short') };
        }
        else {
          const cap = fields.find(([, , verdict]) => verdict === 'cap')?.[1];
          const writes = fields.find(([key]) => key === 'stdin')?.[3];
          const input = writes === undefined ? fields.find(([key]) => key === 'input')?.[1] : Buffer.concat(writes.map((data) => (typeof data === 'string' ? encoder.encode(data) : data)));
          expected = {
            args,
            env: {},
            ...(input === undefined ? {} : { stdinHex: typeof input === 'string' ? utf8Hex(input) : hex(input) }),
            short: verdictValues.includes('short'),
            ...(cap === undefined ? {} : { cap }),
            ...(verdicts.has('onOutput') ? { collected } : {}),
          };
        }
        return runCase(mode, ['sh', '-c', ECHO, 'sh', ...args], callOptions, expected, fields.find(([key]) => key === 'stdin')?.[3]);
      });
    });
  });
}
