import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): each starts an sshd of
    // its own, and the conformance files run the kit in full against it.
    slow: ['test/conformance-root.test.ts', 'test/conformance-unprivileged.test.ts', 'test/faults.test.ts', 'test/server.test.ts', 'test/auth.test.ts'],
  },
);
