/**
 * The owner process of the `owner-killed` ending (spec 1.4, SS-OWNER-1): a
 * child Node.js process of the soak that opens a sandbox on the run's
 * environment (`owner-join.ts`), starts the planned command in the
 * foreground with `stream()`, its standard input fed as the soak would,
 * reads up to the planned number of chunks (fewer once the output is
 * complete: the command lingers), and reports them to the soak. It then
 * goes on reading, holding the Process, until the soak kills it with
 * SIGKILL: no disposal, no close() ever runs.
 *
 * The order arrives as the first IPC message; the answers are IPC messages
 * too ({@link OwnerMessage}), so nothing of the command's output shares a
 * pipe with the process's own standard streams.
 */
import type { Process, StreamName, TerminalSize } from '@sandstream/types';
import { describeThrown } from './consume-support.js';
import { feed } from './feed.js';
import { openOwnerSandbox, type OwnerJoin } from './owner-join.js';

/** What the soak sends the owner process. */
export interface OwnerOrder {
  readonly join: OwnerJoin;
  readonly script: string;
  /** The command's own marker, in its environment beside the run's. */
  readonly owned: { readonly name: string; readonly value: string };
  readonly stdin?: Uint8Array;
  /** Spec 1.5: the terminal to start the command on. */
  readonly pty?: TerminalSize;
  readonly stdinPiece: number;
  readonly atChunk: number;
  /** Bytes the command writes to each stream before it lingers. */
  readonly expected: { readonly stdout: number; readonly stderr: number };
}

/** What the owner process answers: its chunks once it read them, or why it could not. */
export type OwnerMessage =
  | { readonly ready: { readonly pid: number | null; readonly chunks: readonly { readonly stream: StreamName; readonly data: Uint8Array }[] } }
  | { readonly error: string };

function say(message: OwnerMessage): void {
  process.send?.(message);
}

/** Held for the life of this process: the runtime's safety net must not end the command for it. */
const held: Process[] = [];

async function own(order: OwnerOrder): Promise<void> {
  const sandbox = await openOwnerSandbox(order.join);
  const proc = sandbox.stream(['sh', '-c', order.script], {
    stdin: order.stdin === undefined ? 'ignore' : 'pipe',
    env: { [order.owned.name]: order.owned.value },
    ...(order.pty === undefined ? {} : { pty: order.pty }),
  });
  held.push(proc);
  if (order.stdin !== undefined && proc.stdin !== null) void feed(proc.stdin, order.stdin, order.stdinPiece).catch(() => undefined);
  await proc.started();
  const chunks: { stream: StreamName; data: Uint8Array }[] = [];
  const got = { stdout: 0, stderr: 0 };
  const complete = (): boolean => got.stdout >= order.expected.stdout && got.stderr >= order.expected.stderr;
  const iterator = proc[Symbol.asyncIterator]();
  while (chunks.length < order.atChunk && !complete()) {
    const next = await iterator.next();
    if (next.done === true) {
      const result = await proc.wait();
      throw new Error(`the command ended by itself before the owner was killed (exit ${result.exitCode}, signal ${result.signal})`);
    }
    chunks.push({ stream: next.value.stream, data: next.value.data });
    got[next.value.stream] += next.value.data.byteLength;
  }
  say({ ready: { pid: proc.pid ?? null, chunks } });
  // Reading on keeps the output flowing: the command must not stop for want of a reader.
  for (;;) {
    const next = await iterator.next();
    if (next.done === true) break;
  }
}

process.once('message', (order: OwnerOrder) => {
  own(order).catch((error: unknown) => say({ error: describeThrown(error) }));
});
