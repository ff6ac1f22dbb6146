// Background commands on the remote kit (spec 1.2, ADR-0036) over the local transport: records in
// the "sandbox" (a temporary directory here), followers that replay them, and handles that share
// the environment as a second client would.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CommandNotFound, SpawnFailed, type BackgroundProcess, type OutputChunk } from '@sandstream/types';
import { isLive, killEach, markedProcesses } from '@sandstream/test-support/processes';
import { waitFor } from '@sandstream/test-support/timing';
import { FOLLOWER_NAME, TAG_VARIABLE } from '../src/index.js';
import { remoteSandbox } from './remote-sandbox.js';

const root = mkdtempSync(join(tmpdir(), 'sandstream-records-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const base = `${root}/.sandstream-`;
const records = (): string[] => readdirSync(root);
const BOUND = 15_000;

/** Writes `out1`/`err1`, waits for the trigger file, writes `out2`/`err2`, exits 3. */
function twoBursts(trigger: string): string[] {
  return ['sh', '-c', 'printf "out1\\n"; printf "err1\\n" >&2; while [ ! -e "$1" ]; do sleep 0.01; done; printf "out2\\n"; printf "err2\\n" >&2; exit 3', 'sh', trigger];
}

type Text = { stdout: string; stderr: string };

/** Reads to the end. */
async function read(proc: AsyncIterable<OutputChunk>): Promise<Text> {
  const text = { stdout: '', stderr: '' };
  for await (const chunk of proc) text[chunk.stream] += new TextDecoder().decode(chunk.data);
  return text;
}

/** Reads until `until` holds, without leaving the loop (which would end the command). */
async function take(iterator: AsyncIterator<OutputChunk, undefined>, until: (text: Text) => boolean, text: Text = { stdout: '', stderr: '' }): Promise<Text> {
  while (!until(text)) {
    const next = await iterator.next();
    if (next.done === true) throw new Error(`ended before the condition held: ${JSON.stringify(text)}`);
    text[next.value.stream] += new TextDecoder().decode(next.value.data);
  }
  return text;
}
const firstBurst = (t: Text): boolean => t.stdout === 'out1\n' && t.stderr === 'err1\n';

function handle() {
  return remoteSandbox({}, { recordBase: base });
}

describe('background commands over the remote kit', () => {
  it('a second handle lists the command, replays it from the first byte, gets the exact end, and disposal forgets it', async () => {
    const trigger = join(root, 'trigger-1');
    const first = handle();
    const proc = first.sb.stream(twoBursts(trigger), { background: true });
    await proc.started();
    const id = proc.commandId!;
    expect(id.startsWith(`${first.commands.prefix}-`)).toBe(true);
    expect(records()).toContain(`.sandstream-${id}`);
    // The starter reads through a follower too.
    expect(await take(proc[Symbol.asyncIterator](), firstBurst)).toEqual({ stdout: 'out1\n', stderr: 'err1\n' });
    await proc.detach();
    const second = handle();
    expect(await second.sb.commands!()).toEqual([{ commandId: id, argv: twoBursts(trigger), state: 'running' }]);
    const attached = (await second.sb.attach!(id)) as BackgroundProcess;
    expect(attached.skipped).toEqual({ stdout: 0, stderr: 0 });
    const seen = read(attached);
    writeFileSync(trigger, '');
    expect(await seen).toEqual({ stdout: 'out1\nout2\n', stderr: 'err1\nerr2\n' });
    expect(await attached.wait()).toMatchObject({ exitCode: 3, signal: null });
    await attached[Symbol.asyncDispose]();
    expect(records()).not.toContain(`.sandstream-${id}`);
    await expect(second.sb.attach!(id)).rejects.toBeInstanceOf(CommandNotFound);
    await second.sb.close();
    await first.sb.close();
  });

  it('a follow-only attach delivers what follows and no skip count; the start is never run again', async () => {
    const trigger = join(root, 'trigger-2');
    const counter = join(root, 'starts-2');
    const first = handle();
    const argv = ['sh', '-c', `echo x >> '${counter}'; ${twoBursts(trigger)[2]}`, 'sh', trigger];
    const live = first.sb.stream(argv, { background: true });
    await live.started();
    await take(live[Symbol.asyncIterator](), firstBurst);
    await live.detach();
    const second = handle();
    const attached = await second.sb.attach!(live.commandId!, { replay: false });
    expect(attached.skipped).toBeUndefined();
    const seen = read(attached);
    writeFileSync(trigger, '');
    const text = await seen;
    // An unbroken run holding everything written after attach() resolved (SS-ATTACH-2).
    expect(text.stdout.endsWith('out2\n') && text.stderr.endsWith('err2\n')).toBe(true);
    expect(await attached.wait()).toMatchObject({ exitCode: 3 });
    await attached[Symbol.asyncDispose]();
    await second.sb.close();
    await first.sb.close();
    // Following, attaching and listing started nothing (SS-START-3).
    expect(readFileSync(counter, 'utf8')).toBe('x\n');
  });

  it("another handle's close() leaves a command it only followed; the owner's close() ends it and removes its record", async () => {
    const first = handle();
    const kept = first.sb.stream(['sh', '-c', 'sleep 300 & echo "pids $$ $!"; wait'], { background: true });
    await kept.started();
    await kept.detach();
    const second = handle();
    const watched = await second.sb.attach!(kept.commandId!);
    const pids = /pids (\d+) (\d+)/.exec((await take(watched[Symbol.asyncIterator](), (t) => /pids \d+ \d+\n/.test(t.stdout))).stdout)!.slice(1).map(Number);
    await watched.detach();
    await second.sb.close();
    expect((await first.sb.commands!()).find((c) => c.commandId === kept.commandId)?.state).toBe('running');
    expect(pids.map(isLive)).toEqual([true, true]);
    await first.sb.close();
    await waitFor(() => pids.every((pid) => !isLive(pid)), BOUND, 'the tree after the owner closed');
    expect(records().filter((name) => name.startsWith(`.sandstream-${first.commands.prefix}-`))).toEqual([]);
  });

  it('a kill by id from another handle reaches the command itself: SIGTERM first, which it may answer', async () => {
    const first = handle();
    const proc = first.sb.stream(['sh', '-c', 'trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.01; done'], { background: true });
    await proc.started();
    await take(proc[Symbol.asyncIterator](), (t) => t.stdout === 'ready\n');
    await proc.detach();
    const second = handle();
    const doomed = await second.sb.attach!(proc.commandId!, { replay: false });
    const rest = read(doomed);
    await doomed.kill('SIGTERM');
    expect((await rest).stdout).toContain('got-term\n');
    // Its own end, exit 0: the signal went to the command, not to the follower reading it.
    expect(await doomed.wait()).toMatchObject({ exitCode: 0, signal: null });
    await doomed[Symbol.asyncDispose]();
    await second.sb.close();
    await first.sb.close();
  });

  it('a command that cannot start is SpawnFailed, and leaves no record', async () => {
    const first = handle();
    const proc = first.sb.stream(['no-such-program-anywhere'], { background: true });
    await expect(proc.started()).rejects.toBeInstanceOf(SpawnFailed);
    await waitFor(() => !records().some((name) => name.startsWith(`.sandstream-${first.commands.prefix}-`)), BOUND, 'the record of a failed start removed');
    await first.sb.close();
  });

  it('a follower that dies is followed again from where it stopped: no byte twice, none lost', async () => {
    const trigger = join(root, 'trigger-5');
    const first = handle();
    const proc = first.sb.stream(twoBursts(trigger), { background: true });
    await proc.started();
    const iterator = proc[Symbol.asyncIterator]();
    const seen = await take(iterator, firstBurst);
    // The followers carry this handle's prefix and are not the command: kill them (a cut link).
    const followers = markedProcesses(TAG_VARIABLE, `${first.commands.prefix}-`, { prefix: true }).filter((p) => p.cmdline.includes(FOLLOWER_NAME));
    expect(followers.length).toBeGreaterThan(0);
    killEach(followers, 'SIGKILL');
    await waitFor(() => followers.every((p) => !isLive(p.pid)), BOUND, 'the followers gone');
    writeFileSync(trigger, '');
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) break;
      seen[next.value.stream] += new TextDecoder().decode(next.value.data);
    }
    expect(seen).toEqual({ stdout: 'out1\nout2\n', stderr: 'err1\nerr2\n' });
    expect(await proc.wait()).toMatchObject({ exitCode: 3 });
    await first.sb.close();
  });
});
