/**
 * Fuzzed argv, env, cwd and options through the E2B adapter and the real
 * `e2b` SDK against the envd emulator (the suite every adapter runs, from
 * @sandstream/test-support/option-fuzz): an exact round trip or the spec's
 * typed error, no start request for a refused call, nothing left running.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeOptionFuzz } from '@sandstream/test-support/option-fuzz';
import { SpawnFailed } from '@sandstream/types';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';
import { leftovers, MARKER, newRunId, waitFor } from './helpers.js';

const RUN_ID = newRunId();
let envd: EnvdEmulator;
let native: E2BSdkSandbox;

beforeAll(async () => {
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID } });
  native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
});
afterAll(async () => {
  await envd?.close();
  // close() sends SIGKILL to whatever the emulator still runs; on a loaded machine a process that
  // got it may take a moment to exit. The suite's own checks already held each call to nothing left.
  await waitFor(() => leftovers(RUN_ID).length === 0, 20_000, `processes left: ${leftovers(RUN_ID).join('; ')}`);
});

describeOptionFuzz('adapter-e2b', () => createE2BSandbox({ sandbox: native, graceMs: 300 }), {
  runs: 30,
  marker: { name: MARKER, value: RUN_ID },
  startCount: () => envd.requests.filter((request) => request.route === 'Start').length,
});

describe('regressions found by fuzzing', () => {
  it('variables whose names are not shell identifiers, and PWD, PPID and IFS, reach the command as given (found by seed 5922050, argv+env, path 1)', async () => {
    const sb = await createE2BSandbox({ sandbox: native, graceMs: 300 });
    try {
      // D, c, E, i: names the launcher's own shell variables have.
      const env = { 'a-b': 'x', '\u00e9': 'y', '1A': 'z', '-x': "'", PWD: '/nowhere', PPID: 'p', IFS: 'q', PLAIN: 'w', D: 'd', c: 'c', E: 'e', i: 'i' };
      const result = await sb.run(['sh', '-c', 'tr "\\0" "\\n" < /proc/$$/environ'], { env });
      const seen = result.stdoutText.split('\n');
      for (const [name, value] of Object.entries(env)) expect(seen.filter((line) => line.startsWith(`${name}=`)), name).toEqual([`${name}=${value}`]);
    } finally {
      await sb.close();
    }
  });

  it('with such variables and a PATH that leads nowhere, a program named by its path still runs', async () => {
    const sb = await createE2BSandbox({ sandbox: native, graceMs: 300 });
    try {
      const result = await sb.run(['/bin/sh', '-c', 'echo "$PATH"; /usr/bin/tr "\\0" "\\n" < /proc/$$/environ | /bin/grep "^a-b="'], { env: { PATH: '/nonexistent', 'a-b': 'x' } });
      expect(result.stdoutText).toBe('/nonexistent\na-b=x\n');
    } finally {
      await sb.close();
    }
  });

  it('an argument past the kernel\'s 128 KiB limit is SpawnFailed, not a start of unknown outcome (found by seed 41, argv+env, path 24)', async () => {
    const sb = await createE2BSandbox({ sandbox: native, graceMs: 300 });
    try {
      await expect(sb.run(['sh', '-c', 'echo ran', 'sh', 'x'.repeat(140_000)])).rejects.toBeInstanceOf(SpawnFailed);
      await expect(sb.run(['true'], { env: { BIG: 'x'.repeat(140_000) } })).rejects.toBeInstanceOf(SpawnFailed);
    } finally {
      await sb.close();
    }
  });

  it('with such variables, a program whose name holds "=" still runs with its argv (env(1) would take it for an assignment)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandstream-e2b-fuzz-'));
    const sb = await createE2BSandbox({ sandbox: native, graceMs: 300 });
    try {
      writeFileSync(join(dir, 'a=b'), '#!/bin/sh\nprintf "%s|" "$0" "$@"; tr "\\0" "\\n" < /proc/$$/environ | grep "^a-b="\n', { mode: 0o755 });
      const result = await sb.run(['./a=b', 'c=d', '-n'], { cwd: dir, env: { 'a-b': 'x' } });
      expect(result.exitCode).toBe(0);
      expect(result.stdoutText).toBe('./a=b|c=d|-n|a-b=x\n');
    } finally {
      await sb.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
