import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): owner loss, which
    // kills owner processes and waits out the lease bounds under each shell.
    slow: [
      'test/owner-lease.test.ts',
    ],
  },
);
