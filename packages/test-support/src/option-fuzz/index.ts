// Property-based fuzzing of what a caller hands a sandbox: argv, env, cwd,
// standard input and the options bag, with fast-check, one suite every
// adapter runs. Each input either runs with an exact round trip (the
// command echoes its argv, its environment, its working directory and its
// standard input back, hex-encoded so that a text-only backend carries them
// exactly too) or fails with the spec's typed error, within a bound, and
// leaves no process of its own behind. The generators are in inputs.ts, the
// echo in echo.ts, the call and its verdict in verdict.ts.
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
import type { OutputChunk, Sandbox } from '@sandstream/types';
import { markedProcesses } from '../processes.js';
import { ECHO, hex, utf8Hex } from './echo.js';
import { cwdOption, envOption, invalidEnvKeys, optionFields, program, text, textMaybeNul, validEnvEntries, type Mode, type Program } from './inputs.js';
import { call, judge, type Expected } from './verdict.js';

const encoder = new TextEncoder();

/** Options of {@link describeOptionFuzz}. */
export interface OptionFuzzOptions {
  /** Runs per property (default 20; SANDSTREAM_FUZZ_RUNS overrides). */
  readonly runs?: number;
  /** The fixed seed (SANDSTREAM_FUZZ_SEED overrides). */
  readonly seed?: number;
  /** A variable every command of the sandbox carries in its environment, so that leftovers are found. */
  readonly marker?: { readonly name: string; readonly value: string };
  /** The start requests the backend has received so far: a refused call must not add one. */
  readonly startCount?: () => number;
  /** Where the suite makes its working directories, visible inside the sandbox (default: the system's temporary directory). */
  readonly scratchParent?: string;
  /** Bound on one call (default 30 s). */
  readonly commandBoundMs?: number;
  /** Vitest timeout of each property (default 120 s). */
  readonly testTimeoutMs?: number;
}

/**
 * The seed and run count of one property: the fixed defaults, unless
 * SANDSTREAM_FUZZ_SEED / SANDSTREAM_FUZZ_RUNS say otherwise. Shrinking is
 * off unless SANDSTREAM_FUZZ_SHRINK=1, so that a failure in `npm test`
 * reports at once (with the seed and path that reproduce it).
 */
export function fuzzSettings(defaultRuns: number, defaultSeed = 0x5a_5d_02): { seed: number; numRuns: number; endOnFailure: boolean } {
  const seed = process.env['SANDSTREAM_FUZZ_SEED'] === undefined ? defaultSeed : Number(process.env['SANDSTREAM_FUZZ_SEED']);
  const numRuns = process.env['SANDSTREAM_FUZZ_RUNS'] === undefined ? defaultRuns : Number(process.env['SANDSTREAM_FUZZ_RUNS']);
  return { seed, numRuns, endOnFailure: process.env['SANDSTREAM_FUZZ_SHRINK'] !== '1' };
}

/** Counts a case's outcome, or each of several commands' outcomes. */
function tally(counts: Record<string, number>, kinds: string | string[]): void {
  for (const kind of Array.isArray(kinds) ? kinds : [kinds]) counts[kind] = (counts[kind] ?? 0) + 1;
}

/**
 * Defines the fuzz suite against sandboxes from `openSandbox` (one for each
 * property, closed at its end). `options.marker` ({ name, value }) is a variable
 * every command of the sandbox carries, so that leftovers are found;
 * `options.startCount()` counts the start requests the backend received, so
 * that a rejected call is shown to have started nothing.
 */
export function describeOptionFuzz(name: string, openSandbox: () => Sandbox | Promise<Sandbox>, options: OptionFuzzOptions = {}): void {
  const runs = options.runs ?? 20;
  const boundMs = options.commandBoundMs ?? 30_000;
  // A longer run (SANDSTREAM_FUZZ_RUNS) gets a bound that grows with it: 5 s a run.
  const timeoutMs = Math.max(options.testTimeoutMs ?? 120_000, fuzzSettings(runs).numRuns * 5_000);
  let sandbox: Sandbox;
  let scratch: string | undefined;
  let file = '';

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
    async function runCase(mode: Mode, argv: string[], callOptions: unknown, expected: Expected, writes?: ReadonlyArray<string | Uint8Array>): Promise<string> {
      const before = options.startCount?.();
      const outcome = await call(sandbox, mode, argv, callOptions, boundMs, writes);
      const kind = judge(outcome, expected, mode);
      if (before !== undefined && ['invalid', 'capability', 'aborted', 'unknown user refused'].includes(kind)) {
        // Nothing was asked to start, so there is nothing to look for.
        expect(options.startCount!(), 'a refused call sent no start request').toBe(before);
        return kind;
      }
      await expectNoLeftovers();
      return kind;
    }

    /** Nothing carrying the marker is alive once the calls have settled (a process on its way out gets a bounded moment). */
    async function expectNoLeftovers(): Promise<void> {
      if (options.marker === undefined) return;
      const { name: variable, value } = options.marker;
      const deadline = Date.now() + 10_000;
      while (markedProcesses(variable, value).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(markedProcesses(variable, value).map((p) => `${p.pid} ${p.cmdline}`), 'processes outlived the call').toEqual([]);
    }

    async function property<T>(title: string, arbitrary: fc.Arbitrary<T>, predicate: (input: T) => Promise<string | string[]>, propertyRuns = runs): Promise<void> {
      const settings = fuzzSettings(propertyRuns, options.seed);
      const counts: Record<string, number> = {};
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

    const modes = fc.constantFrom<Mode>('run', 'stream');

    const huge = fc.oneof({ weight: 20, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('arg', 'env') });
    const argvEnvInput = fc.record({ mode: modes, program, args: fc.array(textMaybeNul, { maxLength: 6 }), env: fc.option(envOption, { freq: 4, nil: undefined }), huge });

    /** One argv+env case: the call to make and what it must give. */
    type ArgvEnvInput = { mode: Mode; program: Program; args: string[]; env: unknown; huge: 'arg' | 'env' | undefined };
    function argvEnvCase({ mode, program: prog, args, env: given, huge: oversized }: ArgvEnvInput): { mode: Mode; argv: string[]; callOptions: unknown; expected: Expected } {
      // One string past Linux's limit on a single argument or variable (128 KiB): exec fails with E2BIG.
      const oversize = oversized === 'env' && given !== undefined && invalidEnvKeys(given) !== undefined ? undefined : oversized;
      const allArgs = oversize === 'arg' ? [...args, 'x'.repeat(140_000)] : args;
      const env = oversize === 'env' ? { ...(given as object), SANDSTREAM_FUZZ_HUGE: 'x'.repeat(140_000) } : given;
      const argv = prog.kind === 'sh' ? ['sh', '-c', ECHO, 'sh', ...allArgs] : [prog.kind === 'empty' ? '' : prog.name, ...allArgs];
      const badArgv = argv.flatMap((item, index) => ((index === 0 && item === '') || item.includes('\0') ? [`argv[${index}]`] : []));
      const badEnv = env === undefined ? undefined : invalidEnvKeys(env);
      const expected: Expected =
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
        const kinds = outcomes.map((outcome, index) => judge(outcome, cases[index]!.expected, cases[index]!.mode));
        await expectNoLeftovers();
        return kinds;
      }, Math.max(1, Math.round(runs / 3)));
    });

    it('cwd: the directory given (however spelled, or through a symlink), or SpawnFailed when it is missing, a file or a dangling link, or InvalidArgument', { timeout: timeoutMs }, async () => {
      await property('cwd', fc.record({ mode: modes, cwd: cwdOption, args: fc.array(text, { maxLength: 2 }) }), async ({ mode, cwd, args }) => {
        const root = scratch!;
        let value: unknown;
        let expected: Expected = { args, env: {} };
        if (cwd.kind === 'dir') {
          const parent = mkdtempSync(join(root, 'd-'));
          const dir = join(parent, cwd.name);
          mkdirSync(dir);
          // The same directory spelled with a trailing slash, `.`, `//` or `x/../x`.
          value = cwd.spelling === '/../' ? `${dir}/../${cwd.name}` : `${dir}${cwd.spelling}`;
          expected = { ...expected, cwdHex: utf8Hex(`${realpathSync(dir)}\n`) };
        } else if (cwd.kind === 'link') {
          const parent = mkdtempSync(join(root, 'l-'));
          const dir = join(parent, 'target');
          mkdirSync(dir);
          const link = join(parent, cwd.name === 'target' ? 'link' : cwd.name);
          symlinkSync(dir, link);
          value = link;
          expected = { ...expected, cwdHex: utf8Hex(`${realpathSync(dir)}\n`) };
        } else if (cwd.kind === 'missing') {
          value = join(root, 'no-such-dir', cwd.name);
          expected = { spawnFails: true };
        } else if (cwd.kind === 'dangling') {
          const dangling = join(mkdtempSync(join(root, 'g-')), cwd.name);
          symlinkSync(join(root, 'no-such-dir'), dangling);
          value = dangling;
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
        const collected: Uint8Array[] = [];
        let callOptions: unknown = shape === 'null-prototype' ? Object.create(null) : {};
        for (const [key, value] of fields) {
          const actual = key === 'onOutput' && value === 'collect' ? (chunk: OutputChunk) => chunk.stream === 'stdout' && collected.push(chunk.data) : value;
          Object.defineProperty(callOptions as object, key, { value: actual, enumerable: true, writable: true, configurable: true });
        }
        if (shape === 'not-an-object') callOptions = notAnObject;
        const verdicts = new Map(fields.map(([key, , verdict]) => [key, verdict]));
        const verdictValues = [...verdicts.values()];
        const invalid = fields.filter(([, , verdict]) => verdict === 'invalid').map(([key]) => `options.${key}`);
        if (fields.some(([key, value]) => key === 'stdin' && value === 'pipe') && verdicts.has('input') && verdicts.get('input') !== 'invalid') invalid.push('options.input');
        let expected: Expected;
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
          const cap = fields.find(([, , verdict]) => verdict === 'cap')?.[1] as number | undefined;
          const writes = fields.find(([key]) => key === 'stdin')?.[3];
          const input = writes === undefined ? (fields.find(([key]) => key === 'input')?.[1] as string | Uint8Array | undefined) : Buffer.concat(writes.map((data) => (typeof data === 'string' ? encoder.encode(data) : data)));
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
