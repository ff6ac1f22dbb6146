/** Checks of output as text: characters split across writes, and what a text-only backend must deliver. */
import type { OutputChunk } from '@sandstream/types';
import { checkEqual } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { bound, scratch, touch } from './observe.js';

/** "€ ok\n": the euro sign is E2 82 AC. */
const EXPECTED = new Uint8Array([0xe2, 0x82, 0xac, 0x20, 0x6f, 0x6b, 0x0a]);

// Writes the first two bytes of "€", then waits for "go" (created by the kit
// once it received them, or after a few round trips) before the third: the
// character is split between two writes of the command, however the
// backend batches its output.
const SPLIT_SCRIPT = 'printf "\\342\\202"; while [ ! -f "$1/go" ]; do sleep 0.01; done; printf "\\254 ok\\n"';

function joined(chunks: readonly OutputChunk[], stream: 'stdout' | 'stderr'): Uint8Array {
  return new Uint8Array(Buffer.concat(chunks.filter((c) => c.stream === stream).map((c) => c.data)));
}

/**
 * Creates `go` once the first output arrived, or after a measured bound
 * (a backend may hold an incomplete character back). Returns `onChunk` for
 * the output and `done` to stop the timer.
 */
async function releaser(ctx: CaseContext, dir: string): Promise<{ onChunk(): void; done(): void }> {
  const after = await bound(ctx, 1_000);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    clearTimeout(timer);
    touch(ctx, `${dir}/go`).catch(() => undefined);
  };
  const timer = setTimeout(release, after);
  return { onChunk: release, done: () => clearTimeout(timer) };
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
  const first = await releaser(ctx, dir);
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
    first.done();
  }
  if (!ctx.sandbox.capabilities.streaming) return;
  await ctx.exec(['rm', '-f', `${dir}/go`]);
  const second = await releaser(ctx, dir);
  try {
    await using proc = ctx.sandbox.stream(argv, { timeout: 30_000 });
    const chunks: OutputChunk[] = [];
    for await (const chunk of proc) {
      chunks.push({ stream: chunk.stream, data: Uint8Array.from(chunk.data) });
      second.onChunk();
    }
    checkEqual(joined(chunks, 'stdout'), EXPECTED, 'streamed stdout of a character written in two parts');
  } finally {
    second.done();
  }
}
