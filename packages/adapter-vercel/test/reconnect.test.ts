/**
 * Reconnect from a new client (spec 1.2, SS-RECON-1): a second OS process builds a Sandbox from
 * the Vercel sandbox's name alone, through the SDK's Sandbox.get against the emulator, lists a
 * background command the first process started, reads its replay exactly, and kills it; the first
 * process's close() then finds nothing to end, and no record is left.
 */
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';
import { reconnectFromAnotherProcess, SERVER } from '@sandstream/test-support/reconnect';
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
    const sb = await createVercelSandbox({ ...emulator.credentials, fetch: emulator.fetch, recordBase: emulator.recordBase });
    const commandId = await reconnectFromAnotherProcess({
      expect,
      sb,
      child: CHILD,
      requestOf: (id) => ({ url: emulator.url, credentials: emulator.credentials, recordBase: emulator.recordBase, name: sb.native.name, commandId: id, ends: SERVER.ends }),
      // The sandbox's processes are this host's: nothing tagged with the command lives.
      isGone: (id) => markedProcesses(TAG_VARIABLE, id).length === 0,
      waitFor,
    });
    expect(readdirSync(dirname(emulator.recordBase)).filter((name) => name.startsWith(`.sandstream-${commandId.split('-')[0]}-`))).toEqual([]);
  }, 120_000);
});
