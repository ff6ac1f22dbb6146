import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../src/errors.js';
import { DEFAULT_MAX_OUTPUT_BYTES } from '../src/options.js';
import { planRun, planStream, validateArgv } from '../src/runtime/execution-plan.js';

type Plan = (argv: unknown, options?: unknown) => unknown;
const run: Plan = (argv, options) => planRun(argv, options as never);
const stream: Plan = (argv, options) => planStream(argv, options as never);

/** Asserts that `fn` throws InvalidArgument whose `key` is exactly `key`. */
function rejects(fn: () => unknown, key: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected InvalidArgument for ${key}`).toBeInstanceOf(InvalidArgument);
  const error = caught as InvalidArgument;
  expect(error.code).toBe('INVALID_ARGUMENT');
  expect(error.key).toBe(key);
  expect(error.reason.length).toBeGreaterThan(0);
  expect(error.message.startsWith(`${key}: `)).toBe(true);
}

describe.each([
  ['planRun', run],
  ['planStream', stream],
])('%s rejects bad argv (SS-ARG-1)', (_name, plan) => {
  it.each<[string, unknown, string]>([
    ['an empty array', [], 'argv'],
    ['a string', 'ls -la', 'argv'],
    ['undefined', undefined, 'argv'],
    ['null', null, 'argv'],
    ['an array-like object', { 0: 'ls', length: 1 }, 'argv'],
    ['a number element', ['ls', 1], 'argv[1]'],
    ['a Uint8Array element', ['ls', 'a', new Uint8Array([104])], 'argv[2]'],
    ['an undefined element', ['ls', undefined], 'argv[1]'],
    // eslint-disable-next-line no-sparse-arrays
    ['a hole in a sparse array', ['printf', '[%s]', , 'x'], 'argv[2]'],
    ['an empty first element', [''], 'argv[0]'],
    ['NUL in an argument', ['printf', 'a\0b'], 'argv[1]'],
    ['NUL in the program', ['ls\0'], 'argv[0]'],
  ])('%s', (_what, argv, key) => {
    rejects(() => plan(argv), key);
  });

  it('accepts empty strings after the first element', () => {
    expect(() => plan(['printf', '%s|', '', ''])).not.toThrow();
  });

  it('checks argv before the options', () => {
    rejects(() => plan([], { foo: 1 }), 'argv');
  });
});

describe.each([
  ['planRun', run],
  ['planStream', stream],
])('%s rejects bad options (SS-ARG-2)', (_name, plan) => {
  it.each<[string, unknown, string]>([
    ['options that are not an object', 'fast', 'options'],
    ['options that are an array', [], 'options'],
    ['options that are null', null, 'options'],
    ['an unknown option', { foo: 1 }, 'options.foo'],
    ['an unknown option even when undefined', { foo: undefined }, 'options.foo'],
    ['a misspelt option', { timeoutMs: 1000 }, 'options.timeoutMs'],
    ['timeout 0', { timeout: 0 }, 'options.timeout'],
    ['timeout -1', { timeout: -1 }, 'options.timeout'],
    ['timeout NaN', { timeout: Number.NaN }, 'options.timeout'],
    ['timeout Infinity', { timeout: Number.POSITIVE_INFINITY }, 'options.timeout'],
    ['timeout as a string', { timeout: '1' }, 'options.timeout'],
    ['env as a string', { env: 'A=1' }, 'options.env'],
    ['env as an array', { env: [['A', '1']] }, 'options.env'],
    ['env with a non-string value', { env: { X: 1 } }, 'options.env.X'],
    ['env with an undefined value', { env: { X: undefined } }, 'options.env.X'],
    ['env with NUL in a value', { env: { X: 'a\0b' } }, 'options.env.X'],
    ['env with "=" in a name', { env: { 'A=B': 'x' } }, 'options.env.A=B'],
    ['env with an empty name', { env: { '': 'x' } }, 'options.env.'],
    ['an empty cwd', { cwd: '' }, 'options.cwd'],
    ['a numeric cwd', { cwd: 1 }, 'options.cwd'],
    ['NUL in cwd', { cwd: '/tmp\0' }, 'options.cwd'],
    ['a signal that is not an AbortSignal', { signal: { aborted: false } }, 'options.signal'],
    ['limits that are not an object', { limits: 5 }, 'options.limits'],
    ['an unknown limit', { limits: { cpu: 1 } }, 'options.limits.cpu'],
    ['a zero limit', { limits: { cpuSeconds: 0 } }, 'options.limits.cpuSeconds'],
    ['a fractional limit', { limits: { openFiles: 1.5 } }, 'options.limits.openFiles'],
    ['a string limit', { limits: { fileSizeBytes: '1M' } }, 'options.limits.fileSizeBytes'],
    ['an empty user', { user: '' }, 'options.user'],
    ['a numeric user', { user: 0 }, 'options.user'],
    ['input that is a number', { input: 5 }, 'options.input'],
    ['input that is an array', { input: [104, 105] }, 'options.input'],
  ])('%s', (_what, options, key) => {
    rejects(() => plan(['true'], options), key);
  });
});

describe('planRun-only options', () => {
  it.each<[string, unknown, string]>([
    ['negative maxOutputBytes', { maxOutputBytes: -1 }, 'options.maxOutputBytes'],
    ['fractional maxOutputBytes', { maxOutputBytes: 1.5 }, 'options.maxOutputBytes'],
    ['maxOutputBytes as a string', { maxOutputBytes: '64M' }, 'options.maxOutputBytes'],
    ['onOutput that is not a function', { onOutput: 'console.log' }, 'options.onOutput'],
    ['stdin, which only stream() takes', { stdin: 'pipe' }, 'options.stdin'],
  ])('rejects %s', (_what, options, key) => {
    rejects(() => run(['true'], options), key);
  });
});

describe('planStream-only options', () => {
  it.each<[string, unknown, string]>([
    ["stdin 'inherit'", { stdin: 'inherit' }, 'options.stdin'],
    ['stdin true', { stdin: true }, 'options.stdin'],
    ["input with stdin 'pipe'", { stdin: 'pipe', input: 'x' }, 'options.input'],
    ['maxOutputBytes, which only run() takes', { maxOutputBytes: 10 }, 'options.maxOutputBytes'],
    ['onOutput, which only run() takes', { onOutput: () => undefined }, 'options.onOutput'],
  ])('rejects %s', (_what, options, key) => {
    rejects(() => stream(['true'], options), key);
  });
});

describe('an option of the other call', () => {
  it.each<[string, Plan, unknown, string]>([
    ['onOutput given to stream()', stream, { onOutput: () => undefined }, '`onOutput` is an option of run(), not stream() (iterate the Process'],
    ['maxOutputBytes given to stream()', stream, { maxOutputBytes: 10 }, '`maxOutputBytes` is an option of run(), not stream() (stream() buffers nothing'],
    ['stdin given to run()', run, { stdin: 'pipe' }, "`stdin` is an option of stream(), not run() (run() takes its whole standard input up front as `input`"],
  ])('%s: the error names the call that takes it, and what to use instead', (_what, plan, options, reason) => {
    const key = `options.${Object.keys(options as object)[0]!}`;
    rejects(() => plan(['true'], options), key);
    expect(() => plan(['true'], options)).toThrow(`${key}: unknown option: ${reason}`);
  });

  it('an option of neither call stays a bare unknown option', () => {
    expect(() => run(['true'], { shell: true })).toThrow(/^options\.shell: unknown option$/);
    expect(() => stream(['true'], { shell: true })).toThrow(/^options\.shell: unknown option$/);
  });
});

describe('accepted options are normalised', () => {
  it('planRun applies the defaults', () => {
    const plan = planRun(['ls']);
    expect(plan.maxOutputBytes).toBe(64 * 1024 * 1024);
    expect(DEFAULT_MAX_OUTPUT_BYTES).toBe(64 * 1024 * 1024);
    expect(plan).toMatchObject({
      timeout: undefined,
      signal: undefined,
      input: undefined,
      interactive: false,
      onOutput: undefined,
    });
    expect(plan.command).toEqual({
      argv: ['ls'],
      env: {},
      cwd: undefined,
      stdin: 'ignore',
      limits: undefined,
      user: undefined,
    });
  });

  it('treats options set to undefined as absent', () => {
    // Written as a JavaScript caller would; exactOptionalPropertyTypes forbids it in TypeScript.
    const plan = planRun(['ls'], { timeout: undefined, env: undefined, maxOutputBytes: undefined } as never);
    expect(plan.timeout).toBeUndefined();
    expect(plan.command.env).toEqual({});
    expect(plan.maxOutputBytes).toBe(DEFAULT_MAX_OUTPUT_BYTES);
  });

  it('encodes string input as UTF-8 and pipes standard input for it', () => {
    const plan = planRun(['cat'], { input: 'héllo €' });
    expect(plan.input).toBeInstanceOf(Uint8Array);
    expect([...plan.input!]).toEqual([...new TextEncoder().encode('héllo €')]);
    expect(plan.command.stdin).toBe('pipe');
    expect(plan.interactive).toBe(false);
  });

  it('passes Uint8Array input through, empty input included', () => {
    const bytes = Uint8Array.from([0, 255]);
    expect(planRun(['cat'], { input: bytes }).input).toBe(bytes);
    const empty = planRun(['cat'], { input: new Uint8Array(0) });
    expect(empty.input?.byteLength).toBe(0);
    expect(empty.command.stdin).toBe('pipe');
  });

  it("planStream pipes standard input for one-shot input without a writer", () => {
    const plan = planStream(['cat'], { input: 'x' });
    expect(plan.command.stdin).toBe('pipe');
    expect(plan.interactive).toBe(false);
  });

  it("planStream gives a writer for stdin: 'pipe' and none by default", () => {
    const piped = planStream(['cat'], { stdin: 'pipe' });
    expect(piped.command.stdin).toBe('pipe');
    expect(piped.interactive).toBe(true);
    expect(planStream(['cat']).command.stdin).toBe('ignore');
    expect(planStream(['cat'], { stdin: 'ignore' }).interactive).toBe(false);
  });

  it('keeps maxOutputBytes 0, which keeps nothing', () => {
    expect(planRun(['ls'], { maxOutputBytes: 0 }).maxOutputBytes).toBe(0);
  });

  it('passes timeout, signal, cwd, user, limits and onOutput through', () => {
    const controller = new AbortController();
    const onOutput = (): void => undefined;
    const plan = planRun(['ls'], {
      timeout: 1.5,
      signal: controller.signal,
      cwd: '/tmp',
      user: 'nobody',
      limits: { cpuSeconds: 2, openFiles: 64 },
      onOutput,
    });
    expect(plan.timeout).toBe(1.5);
    expect(plan.signal).toBe(controller.signal);
    expect(plan.onOutput).toBe(onOutput);
    expect(plan.command).toMatchObject({ cwd: '/tmp', user: 'nobody', limits: { cpuSeconds: 2, openFiles: 64 } });
  });

  it('accepts an already-aborted signal (the runtime then starts nothing)', () => {
    expect(planStream(['ls'], { signal: AbortSignal.abort() }).signal?.aborted).toBe(true);
  });

  it('skips limits given as undefined', () => {
    const limits = { cpuSeconds: undefined, openFiles: 8 } as never;
    expect(planRun(['ls'], { limits }).command.limits).toEqual({ openFiles: 8 });
  });

  it('accepts options with a null prototype', () => {
    const options = Object.assign(Object.create(null) as object, { timeout: 5 });
    expect(planRun(['ls'], options).timeout).toBe(5);
  });

  it('copies env and argv, so later mutation changes nothing', () => {
    const argv = ['echo', 'one'];
    const env: Record<string, string> = { A: '1', EMPTY: '' };
    const plan = planRun(argv, { env });
    argv[1] = 'two';
    env['A'] = '2';
    expect(plan.command.argv).toEqual(['echo', 'one']);
    expect(plan.command.env).toEqual({ A: '1', EMPTY: '' });
    expect(Object.isFrozen(plan.command.argv)).toBe(true);
    expect(Object.isFrozen(plan.command.env)).toBe(true);
    expect(Object.isFrozen(plan.command)).toBe(true);
  });

  it('validateArgv keeps each argument byte for byte', () => {
    const argv = ['printf', '%s\n', '$(id)', '`id`', '*', 'a b', '-n', '', 'ünï', 'line\nbreak'];
    expect(validateArgv(argv)).toEqual(argv);
  });
});

describe('env names that are Object.prototype keys', () => {
  it('keeps a variable named __proto__ as a variable', () => {
    const env = JSON.parse('{"__proto__": "x", "OTHER": "y"}') as Record<string, string>;
    const plan = planRun(['true'], { env });
    expect(Object.keys(plan.command.env)).toEqual(['__proto__', 'OTHER']);
    expect(Object.getOwnPropertyDescriptor(plan.command.env, '__proto__')?.value).toBe('x');
    expect({ ...plan.command.env }).toHaveProperty(['__proto__'], 'x');
  });
});
