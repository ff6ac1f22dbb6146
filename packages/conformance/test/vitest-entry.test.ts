import { createLocalSandbox } from '@sandstream/adapter-local';
import { describeConformance } from '../src/vitest.js';

// The Vitest entry point, as a third-party author would use it: one test per
// case. Teardown-heavy cases are left to the engine tests to keep this quick.
describeConformance({
  factory: () => createLocalSandbox({ graceMs: 300, capabilities: { user: false } }),
  graceMs: 300,
  // owner.crash's owner process loads the local adapter as a package: it shares this host.
  ownerModule: '@sandstream/adapter-local',
  exclude: ['teardown.*', 'limits.*'],
});
