/**
 * Keepalives as envd reads the client's `Keepalive-Ping-Interval`
 * (packages/envd/internal/permissions/keepalive.go): whole seconds; a zero
 * or negative interval is no interval at all (envd's ticker panics on it),
 * so the emulator fails that stream rather than inventing one.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createProcessClient } from '../src/connection.js';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
let envd: EnvdEmulator;

beforeAll(async () => {
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID } });
});
afterAll(async () => {
  await envd.close();
  await waitFor(() => leftovers(RUN_ID).length === 0, 10_000, 'no process of the run left');
});

function quietStart(interval: string): AsyncIterator<{ event?: { event: { case: string | undefined } } }> {
  const client = createProcessClient({ url: envd.url });
  return client
    .start({ process: { cmd: 'sleep', args: ['30'], envs: {} }, stdin: false }, { headers: { 'Keepalive-Ping-Interval': interval } })
    [Symbol.asyncIterator]() as AsyncIterator<{ event?: { event: { case: string | undefined } } }>;
}

it('a whole number of seconds: keepalives on a quiet stream', async () => {
  const stream = quietStart('1');
  expect((await within(10_000, stream.next(), 'the start event')).value?.event?.event.case).toBe('start');
  expect((await within(10_000, stream.next(), 'a keepalive')).value?.event?.event.case).toBe('keepalive');
  await stream.return?.();
});

it.each(['0', '-1'])('an interval of %s seconds fails the stream, as no ticker can run on it', async (interval) => {
  const stream = quietStart(interval);
  await expect(within(10_000, stream.next(), 'the answer')).rejects.toThrow(/Keepalive-Ping-Interval/);
});
