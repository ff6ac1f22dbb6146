import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): the kit against every
    // broken adapter (directly and through testees), full runs through the Python testee and the
    // Vitest entry.
    // The testee files left out run the kit through testee processes, one or more per test;
    // latency.test.ts runs the kit three times over a backend slowed by 50 ms a call (20 s), and
    // cli.test.ts the kit's command line as a process of its own, sixteen times (35 s), and
    // at-limit.test.ts whole runs against adapters slowed until cases reach their limit (32 s).
    slow: [
      'test/latency.test.ts',
      'test/cli.test.ts',
      'test/at-limit.test.ts',
      'test/broken-adapters.test.ts',
      'test/testee-verdicts.test.ts',
      'test/python-testee.test.ts',
      'test/vitest-entry.test.ts',
      'test/vitest-entry-testee.test.ts',
      'test/testee-faults.test.ts',
      'test/testee-owner.test.ts',
    ],
    // The kit beside a load on every core: `npm run test:load` (`--mode load`) runs it, and the
    // root's `npm test` runs that after every other package's tests, alone on the machine. Its
    // spinning processes would take the CPU that the timing checks of suites beside it wait for.
    alone: { load: ['test/load.test.ts'] },
    // It stubs the environment (NO_COLOR) around the reporters it loads.
    isolated: ['test/reporters.test.ts'],
  },
);
