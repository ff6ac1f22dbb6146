import { fileURLToPath } from 'node:url';
import { describeConformance } from '../src/vitest.js';

// The Vitest entry point through a testee (ADR-0038): the TypeScript testee
// serving adapter-local, one test per case; teardown.garbage-collected is
// registered and skipped with its reason. Teardown-heavy cases are left to
// testee-verdicts.test.ts to keep this quick.
describeConformance({
  testee: {
    command: process.execPath,
    args: [fileURLToPath(new URL('../dist/testee-cli.js', import.meta.url)), fileURLToPath(import.meta.resolve('@sandstream/adapter-local'))],
    forwardStderr: false,
  },
  exclude: ['teardown.*', 'limits.*'],
});
