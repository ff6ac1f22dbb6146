import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): the kit in full on the
    // emulator (and on E2B itself), the kit against broken reconnecting adapters, and the wire-fault
    // matrix.
    // The option fuzzer: hundreds of commands through the SDK over the emulator. faults.test.ts: each
    // transport fault the emulator injects, waited out to its typed error and an empty process table.
    slow: [
      'test/conformance.test.ts',
      'test/conformance-e2b.test.ts',
      'test/broken-reconnect.test.ts',
      'test/fault-matrix.test.ts',
      'test/fuzz.test.ts',
      'test/faults.test.ts',
    ],
  },
);
