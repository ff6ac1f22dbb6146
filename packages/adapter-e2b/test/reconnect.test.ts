/**
 * Reconnect from a new client (spec 1.2, SS-RECON-1): a second OS process builds a Sandbox from
 * the E2B sandbox's id alone, through the SDK's Sandbox.connect against the emulator's control
 * plane, lists a background command the first process started, reads its replay exactly, and
 * kills it; the first process's close() then finds nothing to end.
 */
import { execFile } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLive } from '@sandstream/test-support/processes';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';
import { emptyHome, leftovers, MARKER, newRunId, waitFor } from './helpers.js';

const RUN_ID = newRunId();
const API_KEY = 'e2b_test_key';
const HOME = emptyHome();
const CHILD = fileURLToPath(new URL('./fixtures/reconnect-child.mjs', import.meta.url));
let envd: EnvdEmulator;

beforeAll(async () => {
  envd = await startEnvdEmulator({ controlPlane: { apiKey: API_KEY }, env: { [MARKER]: RUN_ID, HOME } });
});

afterAll(async () => {
  await envd?.close();
  rmSync(HOME, { recursive: true, force: true });
  expect(leftovers(RUN_ID)).toEqual([]);
});

interface Seen {
  listed: Array<{ commandId: string }>;
  seen: { stdout: string; stderr: string };
  skipped: unknown;
  after: Array<{ commandId: string }>;
}

describe('a background command found again from another OS process', () => {
  it('is listed, replayed exactly from its first byte, and killed by id there', async () => {
    const connection = { apiKey: API_KEY, apiUrl: envd.url, sandboxUrl: envd.url };
    const sb = await createE2BSandbox({ connection });
    // A burst of known bytes on each stream, the pids of its tree, then it waits to be killed.
    const lines = Array.from({ length: 2_000 }, (_, i) => `line ${i}`).join('\n');
    const argv = ['sh', '-c', `sleep 300 & echo "pids $$ $!"; printf '%s\\n' "$1"; printf 'to stderr\\n' >&2; wait`, 'sh', lines];
    let commandId = '';
    try {
      const server = sb.stream(argv, { background: true });
      await server.started();
      commandId = server.commandId!;
      await server.detach();
      const request = { connection, sandboxId: sb.native.sandboxId, commandId, ends: { stdout: 'line 1999\n', stderr: 'to stderr\n' } };
      const { stdout } = await promisify(execFile)(process.execPath, [CHILD, JSON.stringify(request)], { timeout: 60_000 });
      const seen = JSON.parse(stdout) as Seen;
      // The emulator's sandboxes share this machine's /tmp, and other test files run beside this one:
      // only this command's record is this test's to judge.
      expect(seen.listed.filter((c) => c.commandId === commandId)).toEqual([{ commandId, argv, state: 'running' }]);
      expect(seen.skipped).toEqual({ stdout: 0, stderr: 0 });
      const pids = /^pids (\d+) (\d+)\n/.exec(seen.seen.stdout)!.slice(1).map(Number);
      expect(seen.seen.stdout).toBe(`pids ${pids[0]} ${pids[1]}\n${lines}\n`);
      expect(seen.seen.stderr).toBe('to stderr\n');
      expect(seen.after.some((c) => c.commandId === commandId)).toBe(false);
      await waitFor(() => pids.every((pid) => !isLive(pid)), 15_000, 'the tree the second process killed');
      expect((await sb.commands!()).some((c) => c.commandId === commandId)).toBe(false);
    } finally {
      await sb.close();
    }
    // Nothing of the first handle's records is left in the sandbox.
    expect(readdirSync('/tmp').filter((name) => name.startsWith(`.sandstream-${commandId.split('-')[0]}-`))).toEqual([]);
  }, 90_000);
});
