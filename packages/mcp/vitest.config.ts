import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): time.test.ts waits out
    // the real 50 s default limit once, to show the SDK client's 60 s never cancels a call first.
    slow: ['test/time.test.ts'],
  },
);
