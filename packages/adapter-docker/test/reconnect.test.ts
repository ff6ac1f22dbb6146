/**
 * Reconnect from a new client (spec 1.2, SS-RECON-1) on a real Engine: a second OS process
 * builds a Sandbox from the container's id alone, lists a background command the first process
 * started, reads its replay exactly, and kills it; the first process's close() then finds
 * nothing to end, and no record is left in the container.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';
import { SERVER, secondProcess } from '@sandstream/test-support/reconnect';
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
    let commandId = '';
    try {
      const server = sb.stream(SERVER.argv, { background: true });
      await server.started();
      commandId = server.commandId!;
      await server.detach();
      const saw = await secondProcess(CHILD, { socketPath: file.engine.socketPath, container: container.id, commandId, ends: SERVER.ends });
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
    const listing = (await createDockerSandbox({ docker: file.docker, container: container.id }).then(async (other) => {
      try {
        return (await other.run(['sh', '-c', 'ls -a /tmp'])).stdoutText;
      } finally {
        await other.close();
      }
    }));
    expect(listing.split('\n').filter((name) => name.startsWith('.sandstream-'))).toEqual([]);
  }, 120_000);
});
