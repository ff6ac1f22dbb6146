/**
 * Fuzzed argv, env, cwd and options through the local adapter (the suite
 * every adapter runs, from @sandstream/test-support/option-fuzz): an exact
 * round trip or the spec's typed error, and nothing left running. The
 * helpers' leak checks run after each property as after any test.
 */
import { describeOptionFuzz } from '@sandstream/test-support/option-fuzz';
import { MARKER, RUN_ID, testSandbox } from './helpers.js';

describeOptionFuzz('adapter-local', () => testSandbox(), { runs: 150, marker: { name: MARKER, value: RUN_ID } });
