/**
 * Fuzzed argv, env, cwd and options through the Vercel adapter and the real
 * `@vercel/sandbox` SDK against the API emulator (the suite every adapter
 * runs, from @sandstream/test-support/option-fuzz): an exact round trip
 * (echoed as hex, since output is text here) or the spec's typed error, no
 * start request for a refused call, nothing left running.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { describeOptionFuzz } from '@sandstream/test-support/option-fuzz';
import { testSandbox, useEmulator } from './helpers.js';

const MARKER = 'SANDSTREAM_TEST_RUN';
const RUN_ID = randomUUID();
const emulator = useEmulator({ env: { ...(process.env as Record<string, string>), [MARKER]: RUN_ID } });

describeOptionFuzz('adapter-vercel', () => testSandbox(), {
  runs: 30,
  marker: { name: MARKER, value: RUN_ID },
  startCount: () => emulator().requests.filter((request) => request.method === 'POST' && request.path.endsWith('/cmd')).length,
});

describe('regressions found by fuzzing', () => {
  it('a variable named __proto__ reaches the command (found by seed 5922050, argv+env, path 33)', async () => {
    const sb = await testSandbox();
    const env = JSON.parse('{"__proto__":"$(id)","A":"1"}') as Record<string, string>;
    const result = await sb.run(['sh', '-c', 'tr "\\0" "\\n" < /proc/$$/environ | grep -E "^(__proto__|A)="'], { env });
    expect(result.stdoutText.split('\n').sort()).toEqual(['', 'A=1', '__proto__=$(id)']);
  });
});
