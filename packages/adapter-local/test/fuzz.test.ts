/**
 * Fuzzed argv, env, cwd and options through the local adapter, in both
 * modes (the suite every adapter runs, from
 * @sandstream/test-support/option-fuzz): an exact round trip or the spec's
 * typed error, and nothing left running. The helpers' leak checks run after
 * each property as after any test.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeOptionFuzz } from '@sandstream/test-support/option-fuzz';
import { MARKER, RUN_ID, testSandbox } from './helpers.js';

const marker = { name: MARKER, value: RUN_ID };

describeOptionFuzz('adapter-local', () => testSandbox(), { runs: 50, marker });

// The isolated mode's /tmp is its own: the working directories are made in a
// host directory bound into each isolated sandbox at the same path (read-only:
// the suite makes them on the host, the command only enters them). Not this
// package's directory: a checkout under /tmp would be hidden by the private /tmp.
const isolatedScratch = realpathSync(mkdtempSync(join(tmpdir(), 'sandstream-fuzz-isolated-')));
afterAll(() => rmSync(isolatedScratch, { recursive: true, force: true }));

describeOptionFuzz("adapter-local isolation: 'namespaces'", () => testSandbox({ isolation: 'namespaces', mounts: [{ source: isolatedScratch }] }), {
  runs: 15,
  marker,
  scratchParent: isolatedScratch,
});

describe("regressions found by fuzzing: isolation: 'namespaces'", () => {
  it('variables whose names are not shell identifiers, or are the entry script\'s own, reach the command as given (found by seed 5922050, argv+env, path 1)', async () => {
    const sb = testSandbox({ isolation: 'namespaces' });
    const env = { 'a-b': 'x', '\u00e9': 'y', '1A': 'z', '-x': "'", PPID: 'p', IFS: 'q', OLDPWD: 'o', cwd: 'c', program: 'p', count: 'n', envtool: 'e', found: 'f' };
    const result = await sb.run(['sh', '-c', 'tr "\\0" "\\n" < /proc/$$/environ'], { env });
    const seen = result.stdoutText.split('\n');
    for (const [name, value] of Object.entries(env)) expect(seen.filter((line) => line.startsWith(`${name}=`)), name).toEqual([`${name}=${value}`]);
  });

  it('with such variables and a PATH that leads nowhere, a program named by its path still runs', async () => {
    const sb = testSandbox({ isolation: 'namespaces' });
    const result = await sb.run(['/bin/sh', '-c', 'echo "$PATH"; /usr/bin/tr "\\0" "\\n" < /proc/$$/environ | /bin/grep "^a-b="'], { env: { PATH: '/nonexistent', 'a-b': 'x' } });
    expect(result.stdoutText).toBe('/nonexistent\na-b=x\n');
  });
});
