// Background commands on the local adapter (spec 1.2, ADR-0036), with real process trees: a
// detached command outlives its Process and its scope, never its sandbox.
import { describe, expect, it } from 'vitest';
import { CommandNotFound, type BackgroundProcess } from '@sandstream/types';
import { waitFor } from '@sandstream/test-support/timing';
import { collect, isAlive, readUntil, TEARDOWN_BOUND_MS, testSandbox } from './helpers.js';

/** Prints the shell's pid and its background child's, then a line a second until killed. */
const SERVER = ['sh', '-c', 'sleep 1000 & echo "pids $$ $!"; while :; do echo tick; sleep 1; done'];

async function pidsOf(proc: BackgroundProcess): Promise<number[]> {
  const seen = await readUntil(proc[Symbol.asyncIterator](), (text) => /pids \d+ \d+\n/.test(text));
  return /pids (\d+) (\d+)/.exec(seen)!.slice(1).map(Number);
}

describe('background commands on the local adapter', () => {
  it('a detached command runs on past its scope; close() ends its whole tree', async () => {
    const sb = testSandbox();
    let pids: number[] = [];
    let id = '';
    {
      await using server = sb.stream(SERVER, { background: true });
      await server.started();
      id = server.commandId!;
      // The starter's own Process reads from the first byte.
      const attached = await sb.attach!(id);
      pids = await pidsOf(attached);
      await attached.detach();
      await server.detach();
    }
    expect(pids.map(isAlive)).toEqual([true, true]);
    expect(await sb.commands!()).toEqual([{ commandId: id, argv: SERVER, state: 'running' }]);
    await sb.close();
    expect(pids.map(isAlive), 'the tree of a detached command after close()').toEqual([false, false]);
  });

  it('attaching and leaving the scope kills by id: the whole tree, and the id is forgotten', async () => {
    const sb = testSandbox();
    const server = sb.stream(SERVER, { background: true });
    await server.started();
    const pids = await pidsOf(server);
    await server.detach();
    {
      await using doomed = await sb.attach!(server.commandId!, { replay: false });
      expect(doomed.skipped?.stdout).toBeGreaterThan(0);
    }
    await waitFor(() => pids.every((pid) => !isAlive(pid)), TEARDOWN_BOUND_MS, 'the tree killed by id');
    await expect(sb.attach!(server.commandId!)).rejects.toBeInstanceOf(CommandNotFound);
    await sb.close();
  });

  it('an ended command gives its exact result and its output to a later attach', async () => {
    const sb = testSandbox();
    const job = sb.stream(['sh', '-c', 'printf "out\\n"; printf "err\\n" >&2; exit 3'], { background: true });
    await job.started();
    await job.detach();
    await waitFor(async () => (await sb.commands!())[0]?.state === 'ended', TEARDOWN_BOUND_MS, 'the job listed as ended');
    await using ended = await sb.attach!(job.commandId!);
    const { stdout, stderr } = await collect(ended);
    expect([stdout, stderr].map((bytes) => new TextDecoder().decode(bytes))).toEqual(['out\n', 'err\n']);
    expect(await ended.wait()).toMatchObject({ exitCode: 3, signal: null, streamed: true });
    await sb.close();
  });
});
