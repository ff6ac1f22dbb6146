import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): time.test.ts waits out
    // the real 50 s default limit once, to show the SDK client's 60 s never cancels a call first;
    // remote-adapters.test.ts needs a Docker Engine (a dockerd of its own) beside the e2b emulator;
    // cli.test.ts runs the server's command line as processes of their own, each loading Node.js
    // and an adapter (as the kit's cli.test.ts, also left out).
    slow: ['test/time.test.ts', 'test/remote-adapters.test.ts', 'test/cli.test.ts'],
  },
);
