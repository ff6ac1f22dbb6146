/**
 * When the envd emulator ends a command's stream, as envd does
 * (packages/envd/internal/services/process/handler/handler.go, `Wait`):
 * only once both output pipes reached end of file, however long a process
 * that inherited them keeps them open after the leader's end; or, after a
 * SIGTERM or SIGKILL through SendSignal, as soon as the leader is reaped,
 * whatever a survivor still holds. Whatever the command wrote before its
 * end reaches the client, even when the emulator's loop is busy when the
 * leader is reaped (the soak once got a relay's stdout 219 061 bytes short
 * when the pipes were closed on a timer).
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { processState } from '@sandstream/remote/emulator';
import { createProcessClient } from '../src/connection.js';
import { Signal } from '../src/gen/envd-process_pb.js';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
let envd: EnvdEmulator;
const strays: number[] = [];

beforeAll(async () => {
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID } });
});
afterAll(async () => {
  for (const pid of strays) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  await envd.close();
  await waitFor(() => leftovers(RUN_ID).length === 0, 10_000, 'no process of the run left');
});

type Stream = AsyncIterator<{ event?: { event: { case: string | undefined; value?: unknown } } }>;

function start(script: string): Stream {
  const client = createProcessClient({ url: envd.url });
  return client.start({ process: { cmd: '/bin/sh', args: ['-c', script], envs: {} }, stdin: true }, {})[Symbol.asyncIterator]() as Stream;
}

async function pidOf(stream: Stream): Promise<number> {
  const first = await within(10_000, stream.next(), 'the start event');
  const start = first.value?.event?.event;
  if (start?.case !== 'start') throw new Error(`expected the start event, got ${JSON.stringify(start?.case)}`);
  return (start.value as { pid: number }).pid;
}

/** The rest of the stream: stdout and stderr as text, and the end event's exit code. */
async function rest(stream: Stream, until?: (stdout: string) => boolean): Promise<{ stdout: string; stderr: string; exitCode: number | undefined }> {
  let stdout = '';
  let stderr = '';
  let exitCode: number | undefined;
  for (;;) {
    const next = await within(20_000, stream.next(), 'the rest of the stream');
    if (next.done === true) break;
    const event = next.value.event?.event;
    if (event?.case === 'data') {
      const output = (event.value as { output: { case: string; value: Uint8Array } }).output;
      if (output.case === 'stdout') stdout += new TextDecoder().decode(output.value);
      else stderr += new TextDecoder().decode(output.value);
      if (until?.(stdout) === true) return { stdout, stderr, exitCode };
    }
    if (event?.case === 'end') exitCode = (event.value as { exitCode: number }).exitCode;
  }
  return { stdout, stderr, exitCode };
}

it('a process left holding the pipes keeps the stream open past the leader: its output arrives, then the end', async () => {
  // The leader prints and exits at once; what it left behind writes 0.2 s after the leader is
  // gone (an emulator that closed the pipes on a timer after the leader's end would lose it).
  const stream = start('sh -c \'while kill -0 "$1" 2>/dev/null; do sleep 0.01; done; sleep 0.2; echo late\' sh $$ & echo early');
  const pid = await pidOf(stream);
  const { stdout, exitCode } = await rest(stream);
  expect(stdout).toBe('early\nlate\n');
  expect(exitCode).toBe(0);
  expect(envd.process(pid)?.end?.exitCode).toBe(0);
});

it('after a SIGTERM through SendSignal the stream ends once the leader is reaped, whatever a survivor still holds', async () => {
  const stream = start('sleep 60 & echo $!');
  const pid = await pidOf(stream);
  const { stdout } = await rest(stream, (text) => text.endsWith('\n'));
  const survivor = Number(stdout.trim());
  strays.push(survivor);
  // The leader is gone, its survivor holds the pipes: no end event while that lasts.
  await waitFor(() => processState(pid) === undefined, 10_000, 'the leader reaped');
  expect(envd.process(pid)?.end).toBeUndefined();
  const client = createProcessClient({ url: envd.url });
  await client.sendSignal({ process: { selector: { case: 'pid', value: pid } }, signal: Signal.SIGTERM });
  const after = await rest(stream);
  expect(after.exitCode).toBe(0);
  // The signal went to the leader's pid only: the survivor lives on, cut off from the client.
  expect(processState(survivor)).toBeDefined();
});

it('what a command wrote before its end reaches the client though the emulator was busy when the leader was reaped', async () => {
  // 100 000 bytes are more than Node.js reads ahead on a paused pipe, so some stay in the pipe.
  const stream = start('read go; head -c 100000 /dev/zero; printf tail >&2');
  const pid = await pidOf(stream);
  const command = envd.processes().find((p) => p.pid === pid) as unknown as { child: ChildProcess };
  command.child.stdout!.pause();
  command.child.stderr!.pause();
  command.child.once('exit', () => {
    const until = performance.now() + 300;
    while (performance.now() < until);
  });
  const client = createProcessClient({ url: envd.url });
  await client.sendInput({ process: { selector: { case: 'pid', value: pid } }, input: { input: { case: 'stdin', value: new TextEncoder().encode('go\n') } } });
  const { stdout, stderr, exitCode } = await rest(stream);
  expect({ stdout: stdout.length, stderr, exitCode }).toEqual({ stdout: 100_000, stderr: 'tail', exitCode: 0 });
});
