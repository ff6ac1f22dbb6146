import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): live-sample.test.ts runs
    // the kit's cases on each raw SDK wrapper, against the vendors' emulators.
    slow: ['test/live-sample.test.ts'],
  },
);
