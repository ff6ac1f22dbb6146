/**
 * A shell line passed as argv (`run(['ls -la'])`) fails with SpawnFailed
 * saying how to write it, in both isolation modes (the suite every adapter
 * runs, from @sandstream/test-support/argv-hint; the hint is the shared
 * runtime's).
 */
import { describeArgvHint } from '@sandstream/test-support/argv-hint';
import { testSandbox } from './helpers.js';

for (const isolation of ['none', 'namespaces'] as const) {
  describeArgvHint(`adapter-local, isolation ${isolation}`, () => testSandbox({ isolation }));
}
