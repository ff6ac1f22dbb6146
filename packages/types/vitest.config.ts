import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): fuzz-wire.test.ts fuzzes
    // the wire forms and option validation (thousands of generated inputs per property), and
    // large-results.test.ts validates and round-trips results at the 64 MiB cap in every validator.
    slow: ['test/fuzz-wire.test.ts', 'test/large-results.test.ts'],
  },
);
