/** Defects of argv, options, the environment and the working directory. */
import { validateArgv } from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';

import { ignoringOptions, pick, wrapSandbox } from './wrap.js';

/** Whether `argv` is one the contract accepts. */
function validArgv(argv: unknown): argv is readonly string[] {
  try {
    validateArgv(argv);
    return true;
  } catch {
    return false;
  }
}

/** `argv` as one string for `sh -c`, joined with spaces and unquoted. */
function throughShell(argv: readonly string[]): readonly string[] {
  return validArgv(argv) ? ['sh', '-c', argv.join(' ')] : argv;
}

const RUN_KEYS = new Set(['timeout', 'env', 'cwd', 'signal', 'limits', 'user', 'input', 'maxOutputBytes', 'onOutput']);
const STREAM_KEYS = new Set(['timeout', 'env', 'cwd', 'signal', 'limits', 'user', 'input', 'stdin']);

export const argumentAdapters: readonly BrokenAdapter[] = [
  {
    name: 'argv-through-shell',
    defect: 'argv is joined with spaces and run by sh -c',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run: (inner, argv, options) => inner.run(throughShell(argv), options),
        stream: (inner, argv, options) => inner.stream(throughShell(argv), options),
      }),
    // The shell chokes on the hostile arguments' quotes before printf runs.
    caughtBy: { 'arguments.argv-byte-exact': /printf failed: sh: .*(Syntax error|unterminated|Unterminated)/ },
    // The kit's own helper commands break too: a failure of the adapter, never a harness error.
    alsoFails: ['arguments.invalid-options'],
    stillPasses: ['arguments.invalid-argv'],
  },
  {
    name: 'argv-coerced',
    defect: 'argv elements that are not strings are converted with String() instead of refused',
    create: (lab) => {
      const coerce = (argv: readonly string[]): readonly string[] => (Array.isArray(argv) ? argv.map(String) : argv);
      return wrapSandbox(lab.local(), {
        run: (inner, argv, options) => inner.run(coerce(argv), options),
        stream: (inner, argv, options) => inner.stream(coerce(argv), options),
      });
    },
    caughtBy: { 'arguments.invalid-argv': /run\(\["echo",1\]\): expected a rejection, but it resolved/ },
    stillPasses: ['arguments.invalid-options', 'arguments.argv-byte-exact'],
  },
  {
    name: 'unknown-options-ignored',
    defect: 'options the adapter does not know are dropped silently instead of refused',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run: (inner, argv, options) => inner.run(argv, pick(options, RUN_KEYS)),
        stream: (inner, argv, options) => inner.stream(argv, pick(options, STREAM_KEYS)),
      }),
    caughtBy: { 'arguments.invalid-options': /run\(\["true"\], \{"nonsense":1\}\): expected a rejection, but it resolved/ },
    stillPasses: ['arguments.invalid-argv', 'environment.env'],
  },
  {
    name: 'env-ignored',
    defect: 'the env option is not passed on',
    create: (lab) => wrapSandbox(lab.local(), ignoringOptions('env')),
    caughtBy: { 'environment.env': /the environment the command saw: got '\|/ },
    stillPasses: ['environment.cwd'],
  },
  {
    name: 'cwd-ignored',
    defect: 'the cwd option is not passed on',
    create: (lab) => wrapSandbox(lab.local(), ignoringOptions('cwd')),
    caughtBy: { 'environment.cwd': /the working directory of run\(\)/ },
    stillPasses: ['environment.env', 'arguments.argv-byte-exact'],
  },
];
