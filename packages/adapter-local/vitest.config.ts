import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): the kit in full on the
    // isolated local sandbox.
    // Owner loss: each test kills an owner process and waits out the bound it states. The option
    // fuzzer: hundreds of generated commands (as in the other adapters). Exhaustion: floods of
    // starts under lowered descriptor and process limits, a sweep of the host's faults.
    slow: [
      'test/conformance-isolated.test.ts',
      'test/owner-loss.test.ts',
      'test/owner-loss-isolated.test.ts',
      'test/fuzz.test.ts',
      'test/exhaustion.test.ts',
    ],
    // It mocks the limits and users modules, to stand for a machine without them.
    isolated: ['test/capabilities.test.ts'],
  },
);
