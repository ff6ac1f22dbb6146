/**
 * Reconnect from a new client (spec 1.2, SS-RECON-1): a second OS process builds a Sandbox from
 * the E2B sandbox's id alone, through the SDK's Sandbox.connect against the emulator's control
 * plane, lists a background command the first process started, reads its replay exactly, and
 * kills it; the first process's close() then finds nothing to end.
 */
import { readdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TAG_VARIABLE } from '@sandstream/remote';
import { markedProcesses } from '@sandstream/test-support/processes';
import { reconnectFromAnotherProcess, SERVER } from '@sandstream/test-support/reconnect';
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

describe('a background command found again from another OS process', () => {
  it('is listed, replayed exactly from its first byte, and killed by id there', async () => {
    const connection = { apiKey: API_KEY, apiUrl: envd.url, sandboxUrl: envd.url };
    const sb = await createE2BSandbox({ connection, recordBase: envd.recordBase });
    const commandId = await reconnectFromAnotherProcess({
      expect,
      sb,
      child: CHILD,
      requestOf: (id) => ({ connection, recordBase: envd.recordBase, sandboxId: sb.native.sandboxId, commandId: id, ends: SERVER.ends }),
      // The sandbox's processes are this host's: nothing tagged with the command lives.
      isGone: (id) => markedProcesses(TAG_VARIABLE, id).length === 0,
      waitFor,
    });
    // Nothing of the first handle's records is left in the sandbox.
    expect(readdirSync(dirname(envd.recordBase)).filter((name) => name.startsWith(`.sandstream-${commandId.split('-')[0]}-`))).toEqual([]);
  }, 90_000);
});
