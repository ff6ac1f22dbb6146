/**
 * Defects that leave the kit waiting rather than answering wrong: the
 * common state of an adapter being written. The kit must still report on
 * them quickly (bench/wall-time.run.ts measures how quickly), saying what
 * it waited for.
 */
import type { ExecResult, OutputChunk, Process, Sandbox, StreamName } from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';
import type { Lab } from './lab.js';
import { mapDriverEvents, transformChunks, wrapSandbox } from './wrap.js';

/**
 * The local adapter whose driver holds each chunk of output back until the
 * next one arrives (of either stream); the last is let go just before the
 * command's end is reported. Nothing is lost, but a command that prints
 * "ready" and waits is never seen to have printed it.
 */
export function withholdingChunks(lab: Lab): Sandbox {
  return lab.driver((driver) =>
    mapDriverEvents(driver, (events) => {
      let held: [StreamName, Uint8Array] | undefined;
      const flush = (): void => {
        if (held !== undefined) events.output(...held);
        held = undefined;
      };
      return {
        output: (stream, data) => {
          flush();
          held = [stream, data];
        },
        leaderExited: (status) => events.leaderExited(status),
        exit: (status) => {
          flush();
          events.exit(status);
        },
        fail: (error) => {
          flush();
          events.fail(error);
        },
      };
    }),
  );
}

/**
 * The local adapter whose `Process.wait()` resolves only once the caller
 * has iterated the output to its end: a wait() on output nobody reads, or
 * after a `break`, never settles (the spec says wait() drains what is
 * unread). run() is unaffected.
 */
export function waitAfterRead(lab: Lab): Sandbox {
  const drained = new WeakMap<Process, { promise: Promise<void>; resolve(): void }>();
  const of = (inner: Process): { promise: Promise<void>; resolve(): void } => {
    let entry = drained.get(inner);
    if (entry === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      entry = { promise, resolve };
      drained.set(inner, entry);
    }
    return entry;
  };
  return wrapSandbox(lab.local(), {
    process: {
      iterator: (inner) =>
        transformChunks(inner, async function* (source): AsyncGenerator<OutputChunk, undefined, undefined> {
          for await (const chunk of source) yield chunk;
          of(inner).resolve();
          return undefined;
        }),
      wait: (inner): Promise<ExecResult> => of(inner).promise.then(() => inner.wait()),
    },
  });
}

export const stallingAdapters: readonly BrokenAdapter[] = [
  {
    name: 'withholds-chunks',
    defect: 'the driver holds each chunk of output back until the next one arrives, so a lone last line shows only at the end',
    create: withholdingChunks,
    // Caught within a measured bound of the command's marker, naming what never came: not at the case's limit.
    caughtBy: {
      'teardown.break': /the line "ready" \(iterating the Process with for await\) never arrived, though the command had printed it \(it created \S+\/heartbeat right after\) \d+ ms before; got instead: nothing/,
      'termination.settings': /the line "ready" \(through run\(\)'s onOutput\) never arrived, though the command had printed it/,
      'output-cap.on-output-live': /onOutput was not called while the command ran: its first line never arrived/,
    },
    // Output that ends with the command is all delivered.
    stillPasses: ['result.exit-codes', 'bytes.final-line', 'stream.tagged-chunks'],
  },
  {
    name: 'wait-after-read',
    defect: 'Process.wait() resolves only once the output was iterated to its end, so wait() on unread output never settles',
    create: waitAfterRead,
    caughtBy: {
      // The Process reports the command exited; the kit gives wait() a measured bound, not the case's limit.
      'result.exit-codes': /wait\(\) of stream\(\["sh","-c","exit 0"\]\) did not settle, though the Process reported the command exited \(exited: true\) \d+ ms before/,
      'wait.drains-unread': /wait\(\) did not drain the unread output: while it was pending, the command stood still/,
    },
    // Read to the end, the output releases wait().
    stillPasses: ['wait.idempotent', 'wait.reader-keeps-output'],
  },
];
