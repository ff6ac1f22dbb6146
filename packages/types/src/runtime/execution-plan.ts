import { InvalidArgument } from '../errors.js';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type CommandOptions,
  type ResourceLimits,
  type RunOptions,
  type StreamOptions,
  type TerminalSize,
} from '../options.js';
import type { OutputChunk } from '../schema/output-chunk.js';
import { describeValue } from './describe-value.js';
import { validateEnv } from './environment.js';
import { isPlainObject } from './plain-object.js';

/** A validated, normalised command: what a driver is asked to start. */
export interface CommandSpec {
  readonly argv: readonly string[];
  /** Only the caller's additions; the adapter merges them over its base environment. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string | undefined;
  /**
   * `'pipe'` when the caller asked for a writer or gave one-shot input, and
   * always under a terminal: the runtime types end-of-file on it (ADR-0052).
   */
  readonly stdin: 'pipe' | 'ignore';
  readonly limits: ResourceLimits | undefined;
  readonly user: string | undefined;
  /**
   * Spec 1.5: the terminal to run the command on, or undefined for pipes.
   * Under a terminal the driver's `writeStdin()` writes raw bytes to it,
   * `closeStdin()` only stops writes (the runtime types end-of-file
   * itself), output is `stdout` alone, and `resize()` sets its size.
   */
  readonly pty: TerminalSize | undefined;
}

/** Everything the runtime needs besides the command itself. */
export interface ExecutionPlan {
  readonly command: CommandSpec;
  readonly timeout: number | undefined;
  readonly signal: AbortSignal | undefined;
  readonly input: Uint8Array | undefined;
  /** True when the caller asked for an interactive writer (`stdin: 'pipe'`). */
  readonly interactive: boolean;
  readonly maxOutputBytes: number;
  readonly onOutput: ((chunk: OutputChunk) => void) | undefined;
  /** `stream()` with `background: true` (spec 1.2): the command belongs to the sandbox, not to a scope. */
  readonly background: boolean;
}

const COMMON_KEYS = ['timeout', 'env', 'cwd', 'signal', 'limits', 'user', 'input', 'pty'] as const;
const RUN_KEYS = new Set<string>([...COMMON_KEYS, 'maxOutputBytes', 'onOutput']);
const STREAM_KEYS = new Set<string>([...COMMON_KEYS, 'stdin', 'background']);

/** What to use instead, for an option of the other call: the error says it, so a caller need not open the `.d.ts`. */
const OTHER_CALL_HINTS: Readonly<Record<string, string>> = {
  maxOutputBytes: "stream() buffers nothing: the Process yields each chunk as it arrives",
  onOutput: 'iterate the Process that stream() returns to see each chunk',
  background: 'run() waits for the end; a command that outlives the call is stream() with background: true',
  stdin: "run() takes its whole standard input up front as `input`; for a writer, use stream() with stdin: 'pipe'",
};

/** The reason an option the call does not take is rejected: it names the call that does take it. */
function unknownOption(key: string, call: 'run' | 'stream'): string {
  const [other, otherKeys] = call === 'run' ? (['stream', STREAM_KEYS] as const) : (['run', RUN_KEYS] as const);
  if (!otherKeys.has(key)) return 'unknown option';
  const hint = OTHER_CALL_HINTS[key];
  return `unknown option: \`${key}\` is an option of ${other}(), not ${call}()${hint === undefined ? '' : ` (${hint})`}`;
}
const LIMIT_KEYS = new Set<string>(['cpuSeconds', 'addressSpaceBytes', 'fileSizeBytes', 'openFiles']);

function noNul(key: string, value: string): string {
  if (value.includes('\0')) throw new InvalidArgument(key, 'must not contain a NUL character');
  return value;
}

/**
 * Checks argv: a non-empty array of strings, the first non-empty, none
 * containing NUL (which no exec call can carry). Returns a frozen copy so a
 * caller mutating its array later cannot change what runs.
 */
export function validateArgv(argv: unknown): readonly string[] {
  if (!Array.isArray(argv)) {
    throw new InvalidArgument('argv', `must be an array of strings, got ${describeValue(argv)}`);
  }
  if (argv.length === 0) throw new InvalidArgument('argv', 'must not be empty');
  // An index loop, not map(): map() skips the holes of a sparse array.
  const copy: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const item: unknown = argv[index];
    if (typeof item !== 'string') {
      throw new InvalidArgument(`argv[${index}]`, `must be a string, got ${index in argv ? describeValue(item) : 'a hole'}`);
    }
    copy.push(noNul(`argv[${index}]`, item));
  }
  if (copy[0] === '') throw new InvalidArgument('argv[0]', 'must not be empty');
  return Object.freeze(copy);
}

function positiveNumber(key: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgument(key, `must be a finite number greater than 0, got ${describeValue(value)}`);
  }
  return value;
}

function positiveInteger(key: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidArgument(key, `must be a positive integer, got ${describeValue(value)}`);
  }
  return value;
}

function nonEmptyString(key: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw new InvalidArgument(key, `must be a non-empty string, got ${describeValue(value)}`);
  }
  return noNul(key, value);
}

function validateLimits(value: unknown): ResourceLimits {
  if (!isPlainObject(value)) {
    throw new InvalidArgument('options.limits', `must be an object, got ${describeValue(value)}`);
  }
  const limits: Record<string, number> = {};
  for (const [name, entry] of Object.entries(value)) {
    if (!LIMIT_KEYS.has(name)) throw new InvalidArgument(`options.limits.${name}`, 'unknown resource limit');
    if (entry === undefined) continue;
    limits[name] = positiveInteger(`options.limits.${name}`, entry);
  }
  return Object.freeze(limits) as ResourceLimits;
}

function validateInput(value: unknown): Uint8Array {
  if (typeof value === 'string') return new TextEncoder().encode(value);
  if (value instanceof Uint8Array) return value;
  throw new InvalidArgument('options.input', `must be a Uint8Array or a string, got ${describeValue(value)}`);
}

/** The largest size a terminal can have: the kernel's `winsize` holds unsigned shorts. */
const MAX_TERMINAL_CELLS = 65_535;

function terminalDimension(key: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TERMINAL_CELLS) {
    throw new InvalidArgument(key, `must be a whole number from 1 to ${MAX_TERMINAL_CELLS}, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * Checks a terminal size (spec 1.5): an object of exactly `cols` and
 * `rows`, each a whole number from 1 to 65535. `path` names the object in
 * errors (`options.pty`); without it, the two numbers are named alone, as
 * `resize(cols, rows)` takes them.
 *
 * @throws InvalidArgument naming the offending key.
 *
 * @example
 * ```ts
 * import { validateTerminalSize } from '@sandstream/types';
 * validateTerminalSize({ cols: 80, rows: 24 }, 'options.pty'); // { cols: 80, rows: 24 }
 * ```
 */
export function validateTerminalSize(value: unknown, path?: string): TerminalSize {
  const name = (key: string): string => (path === undefined ? key : `${path}.${key}`);
  if (!isPlainObject(value)) throw new InvalidArgument(path ?? 'size', `must be an object of cols and rows, got ${describeValue(value)}`);
  for (const key of Object.keys(value)) {
    if (key !== 'cols' && key !== 'rows') throw new InvalidArgument(name(key), 'unknown terminal setting (a size has cols and rows)');
  }
  return Object.freeze({ cols: terminalDimension(name('cols'), value['cols']), rows: terminalDimension(name('rows'), value['rows']) });
}

function isAbortSignal(value: unknown): value is AbortSignal {
  return value instanceof AbortSignal;
}

function planCommand(
  argv: unknown,
  options: unknown,
  call: 'run' | 'stream',
): { plan: Omit<ExecutionPlan, 'maxOutputBytes' | 'onOutput' | 'interactive' | 'command' | 'background'>; raw: Record<string, unknown>; argv: readonly string[] } {
  const checkedArgv = validateArgv(argv);
  if (options !== undefined && !isPlainObject(options)) {
    throw new InvalidArgument('options', `must be an object, got ${describeValue(options)}`);
  }
  const raw = options ?? {};
  const allowed = call === 'run' ? RUN_KEYS : STREAM_KEYS;
  for (const key of Object.keys(raw)) {
    if (!allowed.has(key)) throw new InvalidArgument(`options.${key}`, unknownOption(key, call));
  }
  const o = raw as CommandOptions;
  const plan = {
    timeout: o.timeout === undefined ? undefined : positiveNumber('options.timeout', o.timeout),
    signal: undefined as AbortSignal | undefined,
    input: o.input === undefined ? undefined : validateInput(o.input),
  };
  if (o.signal !== undefined) {
    if (!isAbortSignal(o.signal)) {
      throw new InvalidArgument('options.signal', `must be an AbortSignal, got ${describeValue(o.signal)}`);
    }
    plan.signal = o.signal;
  }
  return { plan, raw, argv: checkedArgv };
}

function commandSpec(argv: readonly string[], raw: Record<string, unknown>, stdin: 'pipe' | 'ignore'): CommandSpec {
  const pty = raw['pty'] === undefined ? undefined : validateTerminalSize(raw['pty'], 'options.pty');
  return Object.freeze({
    argv,
    env: raw['env'] === undefined ? Object.freeze({}) : validateEnv(raw['env']),
    cwd: raw['cwd'] === undefined ? undefined : nonEmptyString('options.cwd', raw['cwd']),
    // A terminal always has an input: the runtime types end-of-file on it when the caller writes nothing.
    stdin: pty === undefined ? stdin : 'pipe',
    limits: raw['limits'] === undefined ? undefined : validateLimits(raw['limits']),
    user: raw['user'] === undefined ? undefined : nonEmptyString('options.user', raw['user']),
    pty,
  });
}

/**
 * Validates the arguments of `run()`. Every problem raises
 * {@link InvalidArgument} naming the offending key; nothing is started.
 */
export function planRun(argv: unknown, options?: RunOptions): ExecutionPlan {
  const { plan, raw, argv: checked } = planCommand(argv, options, 'run');
  const max = raw['maxOutputBytes'];
  if (max !== undefined && (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 0)) {
    throw new InvalidArgument('options.maxOutputBytes', `must be a non-negative integer, got ${describeValue(max)}`);
  }
  const onOutput = raw['onOutput'];
  if (onOutput !== undefined && typeof onOutput !== 'function') {
    throw new InvalidArgument('options.onOutput', `must be a function, got ${describeValue(onOutput)}`);
  }
  return {
    ...plan,
    command: commandSpec(checked, raw, plan.input === undefined ? 'ignore' : 'pipe'),
    interactive: false,
    maxOutputBytes: max ?? DEFAULT_MAX_OUTPUT_BYTES,
    onOutput: onOutput as ((chunk: OutputChunk) => void) | undefined,
    background: false,
  };
}

/** The options a background command cannot take (ADR-0036): a deadline, an abort and standard input belong to a scope. */
const NOT_IN_BACKGROUND = ['timeout', 'signal', 'input'] as const;

function validateBackground(raw: Record<string, unknown>): boolean {
  const background = raw['background'];
  if (background === undefined || background === false) return false;
  if (background !== true) throw new InvalidArgument('options.background', `must be a boolean, got ${describeValue(background)}`);
  for (const key of NOT_IN_BACKGROUND) {
    if (raw[key] !== undefined) {
      throw new InvalidArgument('options.background', `cannot be combined with \`${key}\`: a background command outlives any scope, so it has no deadline, abort or standard input`);
    }
  }
  if (raw['stdin'] === 'pipe') {
    throw new InvalidArgument('options.background', 'cannot be combined with stdin: "pipe": a background command\'s standard input is at end-of-file');
  }
  return true;
}

/** Validates the arguments of `stream()`, like {@link planRun}. */
export function planStream(argv: unknown, options?: StreamOptions): ExecutionPlan {
  const { plan, raw, argv: checked } = planCommand(argv, options, 'stream');
  const stdin = raw['stdin'];
  if (stdin !== undefined && stdin !== 'pipe' && stdin !== 'ignore') {
    throw new InvalidArgument('options.stdin', `must be "pipe" or "ignore", got ${describeValue(stdin)}`);
  }
  if (stdin === 'pipe' && plan.input !== undefined) {
    throw new InvalidArgument('options.input', 'cannot be combined with stdin: "pipe"; write to the stdin writer instead');
  }
  const interactive = stdin === 'pipe';
  const background = validateBackground(raw);
  return {
    ...plan,
    command: commandSpec(checked, raw, interactive || plan.input !== undefined ? 'pipe' : 'ignore'),
    interactive,
    maxOutputBytes: 0,
    onOutput: undefined,
    background,
  };
}
