import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startDaemon, type Daemon } from '../src/index.js';
import type { CommandEvent, StartRequest } from '../src/protocol.js';

/** The daemon's protocol, spoken directly: the properties the guide says the adapter relies on. */
let daemon: Daemon;
beforeAll(async () => {
  daemon = await startDaemon();
});
afterAll(async () => {
  await daemon?.stop();
});

/** Starts a command; yields its events as they arrive. */
async function* start(argv: string[], hangUp?: (event: CommandEvent, response: IncomingMessage) => boolean): AsyncGenerator<CommandEvent> {
  const body: StartRequest = { argv, env: {}, stdin: 'ignore' };
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const outgoing = request(new URL('/commands', daemon.url), { method: 'POST' }, resolve);
    outgoing.once('error', reject);
    outgoing.end(JSON.stringify(body));
  });
  let pending = '';
  for await (const text of response.setEncoding('utf8')) {
    pending += text as string;
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const event = JSON.parse(pending.slice(0, newline)) as CommandEvent;
      pending = pending.slice(newline + 1);
      yield event;
      if (hangUp?.(event, response)) return;
    }
  }
}

const text = (event: CommandEvent): string => (event.type === 'output' ? Buffer.from(event.data, 'base64').toString() : '');

test('the exit comes after the leader ended, once the background child it left has written and gone', async () => {
  const events: CommandEvent[] = [];
  // The child writes "late" only once the leader is reaped (kill -0 then fails), so the order is fixed.
  const script = 'leader=$$; (while kill -0 $leader 2>/dev/null; do sleep 0.01; done; echo late) & echo early';
  for await (const event of start(['sh', '-c', script])) events.push(event);
  const kinds = events.map((event) => (event.type === 'output' ? `output ${text(event).trim()}` : event.type));
  expect(kinds[0]).toBe('started');
  expect(kinds.at(-1)).toBe('exit');
  // The leader prints "early" and exits; "late" comes from the child it left, before the end.
  expect(kinds.indexOf('output early')).toBeLessThan(kinds.indexOf('leader-exited'));
  expect(kinds.indexOf('leader-exited')).toBeLessThan(kinds.indexOf('output late'));
  expect(events.at(-1)).toEqual({ type: 'exit', exitCode: 0, signal: null });
});

test('a command that cannot start is refused as such', async () => {
  const events: CommandEvent[] = [];
  for await (const event of start(['/no/such/program'])) events.push(event);
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ type: 'spawn-failed', message: expect.stringContaining('ENOENT') });
});

test('a client that hangs up before the end gets its command killed, the whole group', async () => {
  let pids: number[] = [];
  const script = 'sleep 60 & echo "$$ $!"; wait';
  for await (const event of start(['sh', '-c', script], (event, response) => {
    if (event.type !== 'output') return false;
    pids = text(event).trim().split(' ').map(Number);
    response.destroy();
    return true;
  })) void event;
  expect(pids).toHaveLength(2);
  // Gone: each check waits for the group's death to be observable, without a verdict from a sleep.
  for (const pid of pids) {
    await expect.poll(() => alive(pid), { timeout: 10_000, interval: 20 }).toBe(false);
  }
});

/** True while `pid` runs (a zombie does not: its parent may simply not have reaped it yet). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
