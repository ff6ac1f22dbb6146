/**
 * The envd emulator closes a command's pipes a short window after it reaped
 * the command (envd's behaviour). Whatever the command wrote before its end
 * is in the pipes by then, and must reach the client even when the
 * emulator's event loop has not read them when the window ends. Under load it
 * had not: the e2b soak (seed 70, 300 processes, kill wait 5 s, beside two
 * `npm test` runs) got a relay's stdout 219 061 bytes short and its stderr
 * empty, with exit status 0, and the bytes were still in the pipes when they
 * were closed.
 *
 * Here the pipes are paused by hand while the command writes, so part of its
 * output is still in the pipe when it ends, and the emulator's loop is then
 * kept busy past the drain window: the window ends before the loop reads the
 * pipe again.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createProcessClient } from '../src/connection.js';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
let envd: EnvdEmulator;

beforeAll(async () => {
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID }, drainAfterExitMs: 100 });
});
afterAll(async () => {
  await envd.close();
  expect(leftovers(RUN_ID)).toEqual([]);
});

it('what a command wrote before its end reaches the client though the pipes were not read when the drain window ended', async () => {
  const client = createProcessClient({ url: envd.url });
  // 100 000 bytes are more than Node.js reads ahead on a paused pipe, so some stay in the pipe.
  const script = 'read go; head -c 100000 /dev/zero; printf tail >&2';
  const stream = client.start({ process: { cmd: '/bin/sh', args: ['-c', script], envs: {} }, stdin: true }, {})[Symbol.asyncIterator]();
  const first = await within(10_000, stream.next(), 'the start event');
  const start = first.value?.event?.event;
  if (start?.case !== 'start') throw new Error(`expected the start event, got ${JSON.stringify(start?.case)}`);
  const pid = start.value.pid;

  const command = envd.processes().find((p) => p.pid === pid) as unknown as { child: ChildProcess };
  command.child.stdout!.pause();
  command.child.stderr!.pause();
  // Right after the emulator's own exit handler armed its drain window: a loop busy past it, so
  // the next thing it does is close the pipes (Node.js resumes the paused pipes on exit, but
  // reading them again waits for the loop).
  command.child.once('exit', () => {
    const until = performance.now() + 300;
    while (performance.now() < until);
  });
  await client.sendInput({ process: { selector: { case: 'pid', value: pid } }, input: { input: { case: 'stdin', value: new TextEncoder().encode('go\n') } } });
  // The end is produced once the drain window closed the pipes.
  await waitFor(() => envd.processes().find((p) => p.pid === pid)?.end !== undefined, 10_000, 'the end of the command');

  let stdout = 0;
  let stderr = '';
  let end: unknown;
  for (;;) {
    const next = await within(10_000, stream.next(), 'the rest of the stream');
    if (next.done === true) break;
    const event = next.value.event?.event;
    if (event?.case === 'data' && event.value.output.case === 'stdout') stdout += event.value.output.value.byteLength;
    if (event?.case === 'data' && event.value.output.case === 'stderr') stderr += new TextDecoder().decode(event.value.output.value);
    if (event?.case === 'end') end = { exitCode: event.value.exitCode, exited: event.value.exited };
  }
  expect(end).toEqual({ exitCode: 0, exited: true });
  expect({ stdout, stderr }).toEqual({ stdout: 100_000, stderr: 'tail' });
});
