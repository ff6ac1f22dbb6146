// The shared Process runtime (`@sandstream/types/runtime`) against a scripted
// in-memory driver: the semantics every adapter built on defineSandbox() gets.
// This file: the safety net that terminates a Process dropped while running.
import { setImmediate as tick } from 'node:timers/promises';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeSandbox, resetFakes, settle } from './runtime-fake-sandbox.js';

const decoder = new TextDecoder();

afterEach(resetFakes);

describe('garbage-collection safety net [SS-TEAR-9]', () => {
  // The safety net runs from a FinalizationRegistry, which only a garbage
  // collection triggers; the only deterministic way to cause one is V8's gc(),
  // which --expose-gc makes available. The flag is set in this test worker
  // alone (vitest runs each file in its own worker), and it changes nothing
  // but the presence of that function.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;

  function watchWarnings(): string[] {
    const warnings: string[] = [];
    vi.spyOn(process, 'emitWarning').mockImplementation(((message: string | Error, options?: { code?: string }) => {
      warnings.push(`${options?.code ?? ''} ${String(message)}`);
    }) as typeof process.emitWarning);
    return warnings;
  }

  async function collectGarbage(until: () => boolean): Promise<void> {
    for (let attempt = 0; attempt < 20 && !until(); attempt++) {
      gc();
      await tick();
    }
  }

  it('terminates a dropped, running Process and warns naming the command', async () => {
    const warnings = watchWarnings();
    const { sb, drivers } = fakeSandbox();
    ((): void => {
      sb.stream(['forgotten', '--flag']);
    })();
    await settle();
    await collectGarbage(() => drivers[0]!.exited);
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^SANDSTREAM_PROCESS_LEAKED /);
    expect(warnings[0]).toContain('["forgotten","--flag"]');
  });

  it('stays silent for a Process that was dropped after it exited', async () => {
    const warnings = watchWarnings();
    const { sb, drivers } = fakeSandbox();
    // Proof that the collection happened: a finalizer of our own on the same object.
    let collected = false;
    const sentinel = new FinalizationRegistry<undefined>(() => {
      collected = true;
    });
    ((): void => {
      sentinel.register(sb.stream(['done']), undefined);
    })();
    await settle();
    drivers[0]!.exit(0);
    await collectGarbage(() => collected);
    expect(collected).toBe(true);
    await settle(); // the runtime's finalizer of the same collection has run too
    expect(warnings).toEqual([]);
    expect(drivers[0]!.signals).toEqual([]);
  });

  // In a bare `for await (const c of sb.stream(...))` the loop holds only the
  // iterator. An iterator that did not reference its Process would let the
  // Process be collected mid-loop, and the safety net would then terminate
  // the command and end the loop early, silently.
  it('never fires during a bare for-await loop, whose only reference is the iterator', async () => {
    const warnings = watchWarnings();
    const { sb, drivers } = fakeSandbox();
    const seen: string[] = [];
    setImmediate(() => drivers[0]!.output('stdout', '0'));
    for await (const chunk of sb.stream(['counter'])) {
      seen.push(decoder.decode(chunk.data));
      await collectGarbage(() => drivers[0]!.exited);
      if (seen.length < 5) drivers[0]!.output('stdout', String(seen.length));
      else drivers[0]!.exit(0);
    }
    expect(seen).toEqual(['0', '1', '2', '3', '4']);
    expect(warnings).toEqual([]);
  });
});
