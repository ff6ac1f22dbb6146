/**
 * Reconnect from a new client (spec 1.2, SS-RECON-1): a second OS process builds a Sandbox from
 * the Vercel sandbox's name alone, through the SDK's Sandbox.get against the emulator, lists a
 * background command the first process started, reads its replay exactly, and kills it; the first
 * process's close() then finds nothing to end, and no record is left.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';
import { SERVER, secondProcess } from '@sandstream/test-support/reconnect';
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
    let commandId = '';
    try {
      const server = sb.stream(SERVER.argv, { background: true });
      await server.started();
      commandId = server.commandId!;
      await server.detach();
      const saw = await secondProcess(CHILD, { url: emulator.url, credentials: emulator.credentials, name: sb.native.name, commandId, ends: SERVER.ends });
      // Other test files' sandboxes may share this machine's /tmp: only this command is this test's to judge.
      expect(saw.listed.filter((c) => c.commandId === commandId)).toEqual([{ commandId, argv: SERVER.argv, state: 'running' }]);
      expect(saw.skipped).toEqual({ stdout: 0, stderr: 0 });
      expect(saw.seen).toEqual(SERVER.expected);
      expect(saw.after.some((c) => c.commandId === commandId)).toBe(false);
      // The sandbox's processes are this host's: nothing tagged with the command lives.
      await waitFor(() => markedProcesses(TAG_VARIABLE, commandId).length === 0, 15_000, 'the tree the second process killed');
      expect((await sb.commands!()).some((c) => c.commandId === commandId)).toBe(false);
    } finally {
      await sb.close();
    }
    expect(readdirSync('/tmp').filter((name) => name.startsWith(`.sandstream-${commandId.split('-')[0]}-`))).toEqual([]);
  }, 120_000);
});
