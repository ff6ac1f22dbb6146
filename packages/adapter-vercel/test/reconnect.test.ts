/**
 * Reconnect from a new client (spec 1.2, SS-RECON-1): a second OS process builds a Sandbox from
 * the Vercel sandbox's name alone, through the SDK's Sandbox.get against the emulator, lists a
 * background command the first process started, reads its replay exactly, and kills it; the first
 * process's close() then finds nothing to end, and no record is left.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';
import { waitFor } from '@sandstream/test-support/timing';
import { TAG_VARIABLE } from '@sandstream/remote';
import { createVercelSandbox } from '../src/index.js';
import { VercelEmulator } from '../src/emulator/index.js';

const CHILD = fileURLToPath(new URL('./fixtures/reconnect-child.mjs', import.meta.url));
let emulator: VercelEmulator;

beforeAll(async () => {
  emulator = await VercelEmulator.start({ stdin: true });
});

afterAll(async () => {
  await emulator?.close();
});

describe('a background command found again from another OS process (Vercel)', () => {
  it('is listed, replayed exactly from its first byte, and killed by id there', async () => {
    const sb = await createVercelSandbox({ ...emulator.credentials, fetch: emulator.fetch });
    const lines = Array.from({ length: 2_000 }, (_, i) => `line ${i}`).join('\n');
    const argv = ['sh', '-c', `sleep 300 & printf '%s\\n' "$1"; printf 'to stderr\\n' >&2; wait`, 'sh', lines];
    let commandId = '';
    try {
      const server = sb.stream(argv, { background: true });
      await server.started();
      commandId = server.commandId!;
      await server.detach();
      const request = { url: emulator.url, credentials: emulator.credentials, name: sb.native.name, commandId, ends: { stdout: 'line 1999\n', stderr: 'to stderr\n' } };
      const { stdout } = await promisify(execFile)(process.execPath, [CHILD, JSON.stringify(request)], { timeout: 60_000 });
      const seen = JSON.parse(stdout) as { listed: Array<{ commandId: string }>; seen: { stdout: string; stderr: string }; skipped: unknown; after: Array<{ commandId: string }> };
      // The emulator's sandboxes share this machine's /tmp with other test files: only this command is this test's to judge.
      expect(seen.listed.filter((c) => c.commandId === commandId)).toEqual([{ commandId, argv, state: 'running' }]);
      expect(seen.skipped).toEqual({ stdout: 0, stderr: 0 });
      expect(seen.seen).toEqual({ stdout: `${lines}\n`, stderr: 'to stderr\n' });
      expect(seen.after.some((c) => c.commandId === commandId)).toBe(false);
      await waitFor(() => markedProcesses(TAG_VARIABLE, commandId).length === 0, 15_000, 'the tree the second process killed');
      expect((await sb.commands!()).some((c) => c.commandId === commandId)).toBe(false);
    } finally {
      await sb.close();
    }
    expect(readdirSync('/tmp').filter((name) => name.startsWith(`.sandstream-${commandId.split('-')[0]}-`))).toEqual([]);
  }, 120_000);
});
