/**
 * Reconnect from a new client (spec 1.2, SS-RECON-1) on a real Engine: a second OS process
 * builds a Sandbox from the container's id alone, lists a background command the first process
 * started, reads its replay exactly, and kills it; the first process's close() then finds
 * nothing to end, and no record is left in the container.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';
import { reconnectFromAnotherProcess, SERVER } from '@sandstream/test-support/reconnect';
import { unless } from '@sandstream/test-support/skips';
import { waitFor } from '@sandstream/test-support/timing';
import { TAG_VARIABLE } from '@sandstream/remote';
import { createDockerSandbox } from '../src/index.js';
import { SKIP, useEngine } from './engine.js';

const file = useEngine();
const CHILD = fileURLToPath(new URL('./fixtures/reconnect-child.mjs', import.meta.url));

unless(describe, SKIP)('a background command found again from another OS process (Docker)', () => {
  it('is listed, replayed exactly from its first byte, and killed by id there', async () => {
    const container = await file.container();
    const sb = await createDockerSandbox({ docker: file.docker, container: container.id });
    await reconnectFromAnotherProcess({
      expect,
      sb,
      child: CHILD,
      requestOf: (id) => ({ socketPath: file.engine.socketPath, container: container.id, commandId: id, ends: SERVER.ends }),
      // The sandbox's processes are this host's: nothing tagged with the command lives.
      isGone: (id) => markedProcesses(TAG_VARIABLE, id).length === 0,
      waitFor,
    });
    // No record is left in the container. (Owner leases, `.sandstream-owner-*`, are no records:
    // the listing's own command holds one, and a handle's goes at its close or once it lapsed.)
    const other = await createDockerSandbox({ docker: file.docker, container: container.id });
    try {
      const listing = (await other.run(['sh', '-c', 'ls -a /tmp'])).stdoutText;
      expect(listing.split('\n').filter((name) => name.startsWith('.sandstream-') && !name.startsWith('.sandstream-owner-'))).toEqual([]);
    } finally {
      await other.close();
    }
  }, 120_000);
});
