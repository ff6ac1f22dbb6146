/** Checks of output as text: characters split across writes, and what a text-only backend must deliver. */
import type { OutputChunk } from '@sandstream/types';
import { checkEqual } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { arrivalOf, signal } from './arrival.js';
import { scratch, touch } from './observe.js';

/** "€ ok\n": the euro sign is E2 82 AC. */
const EXPECTED = new Uint8Array([0xe2, 0x82, 0xac, 0x20, 0x6f, 0x6b, 0x0a]);

// Writes the first two bytes of "€", creates "printed", then waits for "go"
// (created by the kit once it received them, or once they were printed and
// had a measured bound to arrive) before the third: the character is split
// between two writes of the command, however the backend batches its output.
const SPLIT_SCRIPT = 'printf "\\342\\202"; : > "$1/printed"; while [ ! -f "$1/go" ]; do sleep 0.01; done; printf "\\254 ok\\n"';

function joined(chunks: readonly OutputChunk[], stream: 'stdout' | 'stderr'): Uint8Array {
  return new Uint8Array(Buffer.concat(chunks.filter((c) => c.stream === stream).map((c) => c.data)));
}

/**
 * Creates `go` once the first output arrived, or once the command printed it
 * ("printed" exists) and it had the delivery bound to arrive: a backend may
 * hold an incomplete character back, and is then let go on, not failed.
 * Returns `onChunk` for the output and `done`, which stops watching and
 * resolves once no helper command of this releaser is in flight.
 */
function releaser(ctx: CaseContext, dir: string): { onChunk(): void; done(): Promise<void> } {
  let released = false;
  let touching: Promise<void> = Promise.resolve();
  const arrived = signal();
  const release = (): void => {
    if (released) return;
    released = true;
    arrived.saw();
    touching = touch(ctx, `${dir}/go`).catch(() => undefined);
  };
  // Not arriving is allowed here (the command is let go on): goesOn keeps it running.
  const watching = arrivalOf(arrived.promise, { ctx, marker: `${dir}/printed`, what: 'the first two bytes', got: () => '', goesOn: true }).then(release, release);
  return {
    onChunk: release,
    async done() {
      released = true;
      arrived.saw();
      await watching;
      await touching;
    },
  };
}

/**
 * A UTF-8 character the command writes in two parts must reach run()'s
 * result, onOutput and (with streaming) the iterator intact: an adapter
 * that decodes each chunk on its own turns it into replacement characters.
 */
export async function checkSplitCharacter(ctx: CaseContext): Promise<void> {
  const dir = await scratch(ctx);
  const argv = ['sh', '-c', SPLIT_SCRIPT, 'sh', dir];
  const live: OutputChunk[] = [];
  const first = releaser(ctx, dir);
  try {
    const result = await ctx.sandbox.run(argv, {
      timeout: 30_000,
      onOutput: (chunk) => {
        live.push({ stream: chunk.stream, data: Uint8Array.from(chunk.data) });
        first.onChunk();
      },
    });
    checkEqual(result.stdout, EXPECTED, 'run() stdout of a character written in two parts');
    checkEqual(joined(live, 'stdout'), EXPECTED, 'the same output as onOutput received it');
  } finally {
    await first.done();
  }
  if (!ctx.sandbox.capabilities.streaming) return;
  await ctx.exec(['rm', '-f', `${dir}/go`, `${dir}/printed`]);
  const second = releaser(ctx, dir);
  try {
    await using proc = ctx.sandbox.stream(argv, { timeout: 30_000 });
    const chunks: OutputChunk[] = [];
    for await (const chunk of proc) {
      chunks.push({ stream: chunk.stream, data: Uint8Array.from(chunk.data) });
      second.onChunk();
    }
    checkEqual(joined(chunks, 'stdout'), EXPECTED, 'streamed stdout of a character written in two parts');
  } finally {
    await second.done();
  }
}
