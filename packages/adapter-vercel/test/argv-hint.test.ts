/**
 * A shell line passed as argv (`run(['ls -la'])`) fails with SpawnFailed
 * saying how to write it, through the real `@vercel/sandbox` SDK against the
 * emulator (the suite every adapter runs, from
 * @sandstream/test-support/argv-hint; the hint is the shared runtime's).
 */
import { describeArgvHint } from '@sandstream/test-support/argv-hint';
import { testSandbox, useEmulator } from './helpers.js';

useEmulator();
describeArgvHint('adapter-vercel', () => testSandbox());
