import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

// --expose-gc: the soak measures the heap after full collections.
export default sandstreamVitestConfig(
  { execArgv: ['--expose-gc'] },
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): soaks, each runs many
    // processes on an adapter.
    slow: [
      'test/soak.test.ts',
      'test/runner-fails.test.ts',
      'test/background-fails.test.ts',
      'test/owner-killed.test.ts',
      'test/host-limits.test.ts',
    ],
  },
);
