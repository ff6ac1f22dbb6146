import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): the kit's verdicts on the
    // AI SDK's sandboxes, each a full run.
    slow: [
      'test/kit-verdicts.test.ts',
    ],
  },
);
