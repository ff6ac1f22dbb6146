/** The options every entry point of the kit takes, and their checks. */
import { InvalidArgument, type CaseResult, type SandboxFactory } from '@sandstream/types';
import type { ConformanceCase } from './case.js';
import { CASES } from './cases/index.js';
import { checkHooks, type ConformanceHooks } from './hooks.js';
import { checkSelectors } from './select.js';
import type { RunWarning } from './warnings.js';
import type { SchedulePlan } from './schedule.js';
import type { TesteeCommand } from './testee/link.js';

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** Returns a fresh, isolated sandbox on every call. Not with `testee`. */
  readonly factory?: SandboxFactory;
  /**
   * An adapter in any language, run as a testee process that speaks the
   * testee protocol on its standard streams (spec 1.3 section 18,
   * ADR-0038), instead of `factory` and `hooks`. The kit starts it, runs
   * every case through it, and ends its process tree when the run ends.
   */
  readonly testee?: TesteeCommand;
  /** The adapter module's lifecycle and observation hooks (its `conformanceHooks` export). */
  readonly hooks?: ConformanceHooks;
  /**
   * Spec 1.4: the adapter module (a file path, or an installed package
   * name) that `owner.crash` loads in a second OS process to crash an owner
   * of commands (SS-OWNER-1): its default export is `factory`'s equivalent,
   * and its `conformanceHooks` are `hooks`'. The CLI passes the module it
   * loaded. Without it, and without a `module` from the `owner` hook, that
   * case is a harness error that names this option. Not with `testee`.
   */
  readonly ownerModule?: string;
  /** Run only cases matching one of these (id, `prefix.*`, or requirement id). */
  readonly include?: readonly string[];
  /** Report cases matching one of these as `disabled`. */
  readonly exclude?: readonly string[];
  /** Case ids the adapter is known to fail; a listed case that passes makes the run fail as stale. */
  readonly expectedFailures?: readonly string[];
  /** Per-case time limit in ms (default 20000); a hung case fails instead of hanging the run. */
  readonly caseTimeoutMs?: number;
  /**
   * The grace period for a sandbox that does not state its own `termination`
   * (a 1.0 adapter). The kit reads a sandbox's `termination`; a value here
   * that contradicts it is a harness error.
   */
  readonly graceMs?: number;
  /**
   * How many independent cases run at once, each on its own sandbox; cases
   * that must run alone still do. `'auto'` (the default): 1 on a backend
   * whose round trip is under 30 ms (local), with the cases that only wait
   * overlapping them (ADR-0032); on a slower one, as many as the machine's
   * idle CPU carries, measured while the kit timed its trivial commands, at
   * most 4 (ADR-0051). A number is a hard cap on the cases at once. Under
   * any setting, a case that reaches its limit while the adapter still
   * answers and something slowed it (other cases, a full machine, a slower
   * backend) is run again alone, within a scaled limit, before its verdict,
   * unless the run has already failed (not under the Vitest entry).
   */
  readonly concurrency?: number | 'auto';
  /** Called once before the first case with how the run lays out its cases, and why. */
  readonly onSchedule?: (plan: SchedulePlan) => void;
  /** Called as each case starts and ends, for live progress. */
  readonly onCaseStart?: (testCase: ConformanceCase) => void;
  /**
   * Called as each case ends; called again for a case whose result changed
   * after it ended (the adapter raised an uncaught exception or unhandled
   * rejection attributed to it).
   */
  readonly onCaseEnd?: (result: CaseResult) => void;
  /**
   * Receives every process warning emitted during the run, with the cases it
   * is attributed to and whether they provoke it on purpose. Without it,
   * unexpected warnings go on to the process's own warning listeners (Node
   * prints them) and expected ones are dropped.
   */
  readonly onWarning?: (warning: RunWarning) => void;
}

/** Options renamed or removed, with what replaces them: they fail loudly instead of being ignored. */
const RENAMED_OPTIONS: Readonly<Record<string, string>> = {
  only: 'renamed to `include`',
};

const KNOWN_OPTIONS = new Set([
  'factory',
  'testee',
  'hooks',
  'ownerModule',
  'include',
  'exclude',
  'expectedFailures',
  'caseTimeoutMs',
  'graceMs',
  'concurrency',
  'onSchedule',
  'onCaseStart',
  'onCaseEnd',
  'onWarning',
]);

/** The longest delay setTimeout honours (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The options every entry point shares, checked and with defaults applied. */
export interface CheckedOptions {
  readonly caseTimeoutMs: number;
  /** Only for sandboxes that state no `termination`. */
  readonly graceMs: number | undefined;
  readonly concurrency: number | 'auto';
  readonly hooks: ConformanceHooks;
  /** The module `owner.crash` loads in its owner process, if one was given. */
  readonly ownerModule: string | undefined;
}

/** Checks the options shared by every entry point; throws InvalidArgument naming the first bad one. */
export function validateOptions(options: ConformanceOptions): CheckedOptions {
  for (const key of Object.keys(options)) {
    if (key in RENAMED_OPTIONS) throw new InvalidArgument(`options.${key}`, RENAMED_OPTIONS[key]!);
    // Old or misspelt options must fail loudly rather than be ignored.
    if (!KNOWN_OPTIONS.has(key)) throw new InvalidArgument(`options.${key}`, 'unknown option');
  }
  if (options.testee !== undefined) {
    if (options.factory !== undefined || options.hooks !== undefined || options.ownerModule !== undefined) {
      throw new InvalidArgument('options.testee', 'takes the place of factory, hooks and ownerModule: give one or the other');
    }
    checkTestee(options.testee);
  } else if (typeof options.factory !== 'function') {
    throw new InvalidArgument('options.factory', 'must be a function returning a Sandbox (or give options.testee)');
  }
  const caseTimeoutMs = options.caseTimeoutMs ?? 20_000;
  const graceMs = options.graceMs;
  const concurrency = options.concurrency ?? 'auto';
  if (!Number.isFinite(caseTimeoutMs) || caseTimeoutMs <= 0 || caseTimeoutMs > MAX_TIMER_MS) {
    throw new InvalidArgument('options.caseTimeoutMs', `must be a positive number of at most ${MAX_TIMER_MS}`);
  }
  if (graceMs !== undefined) {
    if (graceMs > MAX_TIMER_MS) throw new InvalidArgument('options.graceMs', `must be at most ${MAX_TIMER_MS}`);
    if (!Number.isFinite(graceMs) || graceMs < 0) throw new InvalidArgument('options.graceMs', 'must be a non-negative number');
  }
  if (concurrency !== 'auto' && (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64)) {
    throw new InvalidArgument('options.concurrency', "must be 'auto' or an integer from 1 to 64");
  }
  const hooks = checkHooks(options.hooks, 'options.hooks');
  const ownerModule = options.ownerModule;
  if (ownerModule !== undefined && (typeof ownerModule !== 'string' || ownerModule.trim() === '')) {
    throw new InvalidArgument('options.ownerModule', 'must be a non-empty string: the adapter module\'s file path or package name');
  }
  checkSelectors(CASES, options.include ?? [], 'options.include');
  checkSelectors(CASES, options.exclude ?? [], 'options.exclude');
  return { caseTimeoutMs, graceMs, concurrency, hooks, ownerModule };
}


/** Checks a testee command; throws InvalidArgument naming the first bad member. */
function checkTestee(testee: TesteeCommand): void {
  if (typeof testee !== 'object' || testee === null) throw new InvalidArgument('options.testee', 'must be an object: { command, args?, cwd?, env? }');
  for (const key of Object.keys(testee)) {
    if (!['command', 'args', 'cwd', 'env', 'forwardStderr'].includes(key)) throw new InvalidArgument(`options.testee.${key}`, 'unknown option (known: command, args, cwd, env, forwardStderr)');
  }
  if (typeof testee.command !== 'string' || testee.command.trim() === '') throw new InvalidArgument('options.testee.command', 'must be a non-empty command line (or a program, with args)');
  if (testee.args !== undefined && (!Array.isArray(testee.args) || testee.args.some((a) => typeof a !== 'string'))) throw new InvalidArgument('options.testee.args', 'must be an array of strings');
  if (testee.cwd !== undefined && typeof testee.cwd !== 'string') throw new InvalidArgument('options.testee.cwd', 'must be a string');
  if (testee.env !== undefined && (typeof testee.env !== 'object' || testee.env === null || Object.values(testee.env).some((v) => typeof v !== 'string'))) {
    throw new InvalidArgument('options.testee.env', 'must be an object of strings');
  }
}
