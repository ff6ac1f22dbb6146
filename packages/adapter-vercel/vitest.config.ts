import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): the kit in full on the
    // emulator (and on Vercel itself), and the wire-fault matrix.
    // The option fuzzer: hundreds of commands through the SDK over the emulator.
    slow: [
      'test/conformance.test.ts',
      'test/conformance-real.test.ts',
      'test/fault-matrix.test.ts',
      'test/fuzz.test.ts',
    ],
  },
);
