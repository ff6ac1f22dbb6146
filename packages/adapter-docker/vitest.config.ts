import { sandstreamVitestConfig } from '@sandstream/tsconfig/vitest';

export default sandstreamVitestConfig(
  {},
  {
    // Left out of `npm run test:fast` (every file still runs in `npm test`): every file but demux
    // starts a dockerd of its own (test/engine.ts); conformance runs the kit in full.
    slow: [
      'test/adapter.test.ts',
      'test/conformance.test.ts',
      'test/conformance-gvisor.test.ts',
      'test/faults-gvisor.test.ts',
      'test/faults.test.ts',
      'test/fuzz.test.ts',
      'test/mcp.test.ts',
      'test/reconnect.test.ts',
      'test/restart.test.ts',
      'test/runtime.test.ts',
      'test/gvisor.test.ts',
      'test/smoke.test.ts',
    ],
  },
);
