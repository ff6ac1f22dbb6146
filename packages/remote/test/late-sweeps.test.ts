/**
 * What a driver could not end within its bound is swept again in the
 * background: a start the backend applies after the driver gave up on it,
 * and a tree whose kill went unanswered (soak finding: vercel and e2b at
 * 2000 processes under load, commands left running after starts of unknown
 * outcome). Until the window passes with a sweep answered, or the handle
 * closes (ADR-0033, "Sweeps that outlast the request bound").
 */
import { describe, expect, it } from 'vitest';
import { TransportError } from '@sandstream/types';
import { ended, markedProcesses } from '@sandstream/test-support/processes';
import { waitFor, within } from '@sandstream/test-support/timing';
import { TAG_VARIABLE } from '../src/index.js';
import { remoteSandbox } from './remote-sandbox.js';

/** A start the local backend applies only when the test says so. */
function lateStart() {
  let apply!: () => void;
  let started!: (pid: number) => void;
  const pid = new Promise<number>((resolve) => (started = resolve));
  const late = { applied: new Promise<void>((resolve) => (apply = resolve)), started };
  return { late, apply, pid };
}

describe('the late sweeps', () => {
  it('kill a start the backend applies after the driver gave up on it, never starting it again', async () => {
    const { late, apply, pid } = lateStart();
    const { sb, transport, commands } = remoteSandbox({ lateStart: late });
    await expect(sb.run(['sh', '-c', 'sleep 30 & wait'])).rejects.toBeInstanceOf(TransportError);
    const id = transport.counted.starts[0]!.id;
    // The driver's own sweep ran, and found nothing: the start had not been applied.
    expect(transport.counted.helpers.some((argv) => argv[4] === 'abandon' && argv[5] === id)).toBe(true);
    expect(commands.lateSweeps).toBe(1);
    apply();
    const supervisor = await within(10_000, pid, 'the late start');
    await ended(supervisor, 20_000, 'the supervisor of the late start');
    await waitFor(() => markedProcesses(TAG_VARIABLE, id, { prefix: true }).length === 0, 20_000, 'the late tree gone');
    expect(transport.counted.starts).toHaveLength(1);
  });

  it('end a tree whose kill went unanswered, once the backend answers again', async () => {
    const { sb, transport } = remoteSandbox({ breakOnStdout: 'ready', failHelpers: 1_000 });
    const error = await sb.run(['sh', '-c', 'echo ready; sleep 30']).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/may still run: it is swept again in the background/);
    const members = markedProcesses(TAG_VARIABLE, transport.counted.starts[0]!.id);
    expect(members.length).toBeGreaterThan(0);
    transport.options.failHelpers = 0;
    for (const member of members) await ended(member.pid, 20_000, `the unkilled ${member.cmdline}`);
  });

  it('stop once the window passed with a sweep answered', async () => {
    const { late } = lateStart();
    const { sb, transport, commands } = remoteSandbox({ lateStart: late }, { lateSweepMs: 0 });
    await expect(sb.run(['true'])).rejects.toBeInstanceOf(TransportError);
    expect(commands.lateSweeps).toBe(1);
    await waitFor(() => commands.lateSweeps === 0, 20_000, 'the late sweep to end');
    expect(transport.counted.helpers.filter((argv) => argv[4] === 'abandon')).toHaveLength(2);
  });

  it('stop when the handle closes, whose sweep supersedes them', async () => {
    const { late } = lateStart();
    const { sb, transport, commands } = remoteSandbox({ lateStart: late, failHelpers: 1_000 });
    await expect(sb.run(['true'])).rejects.toBeInstanceOf(TransportError);
    expect(commands.lateSweeps).toBe(1);
    transport.options.failHelpers = 0;
    await sb.close();
    await waitFor(() => commands.lateSweeps === 0, 5_000, 'the late sweep to stop');
  });
});
