/**
 * Reconnect from a new client (spec 1.2, SS-RECON-1) on a real Engine: a second OS process
 * builds a Sandbox from the container's id alone, lists a background command the first process
 * started, reads its replay exactly, and kills it; the first process's close() then finds
 * nothing to end, and no record is left in the container.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';
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
    const lines = Array.from({ length: 2_000 }, (_, i) => `line ${i}`).join('\n');
    const argv = ['sh', '-c', `sleep 300 & printf '%s\\n' "$1"; printf 'to stderr\\n' >&2; wait`, 'sh', lines];
    let commandId = '';
    try {
      const server = sb.stream(argv, { background: true });
      await server.started();
      commandId = server.commandId!;
      await server.detach();
      const request = { socketPath: file.engine.socketPath, container: container.id, commandId, ends: { stdout: 'line 1999\n', stderr: 'to stderr\n' } };
      const { stdout } = await promisify(execFile)(process.execPath, [CHILD, JSON.stringify(request)], { timeout: 60_000 });
      const seen = JSON.parse(stdout) as { listed: unknown[]; seen: { stdout: string; stderr: string }; skipped: unknown; after: unknown[] };
      expect(seen.listed).toEqual([{ commandId, argv, state: 'running' }]);
      expect(seen.skipped).toEqual({ stdout: 0, stderr: 0 });
      expect(seen.seen).toEqual({ stdout: `${lines}\n`, stderr: 'to stderr\n' });
      expect(seen.after).toEqual([]);
      // The container's processes are this host's: nothing tagged with the command lives.
      await waitFor(() => markedProcesses(TAG_VARIABLE, commandId).length === 0, 15_000, 'the tree the second process killed');
      expect(await sb.commands!()).toEqual([]);
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
