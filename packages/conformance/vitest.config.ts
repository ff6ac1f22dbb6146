import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): the kit against every
    // broken adapter (directly and through testees), full runs through the Python testee and the
    // Vitest entry.
    // The testee files left out run the kit through testee processes, one or more per test.
    slow: [
      'test/broken-adapters.test.ts',
      'test/testee-verdicts.test.ts',
      'test/python-testee.test.ts',
      'test/vitest-entry.test.ts',
      'test/vitest-entry-testee.test.ts',
      'test/testee-faults.test.ts',
      'test/testee-owner.test.ts',
    ],
  },
);
