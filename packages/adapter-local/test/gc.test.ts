/**
 * The safety net for Processes dropped without disposal (SS-TEAR-9): the
 * FinalizationRegistry in the runtime's process-handle.ts terminates the
 * command and warns. Needs `gc()`, enabled here at run time.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { captureWarnings, type CapturedWarnings } from '@sandstream/test-support/warnings';
import type { ExecResult, Sandbox } from '@sandstream/types';
import { eventually, isAlive, TEARDOWN_BOUND_MS, testSandbox } from './helpers.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const dir = mkdtempSync(join(tmpdir(), 'sandstream-gc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The leak warnings these tests provoke are asserted, not printed.
let captured: CapturedWarnings | undefined;
beforeEach(() => {
  captured = captureWarnings(['SANDSTREAM_PROCESS_LEAKED']);
});
afterEach(() => {
  captured?.release();
});

const leakWarnings = (): Array<Error & { code?: string }> => [...(captured?.warnings ?? [])];

/** Collects garbage a few times, letting finalizers run in between. */
async function collectGarbage(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts a command that writes its pid to a file, keeping no reference to
 * its Process. A separate, non-inlined function, so no local of the test's
 * frame can keep the handle alive.
 */
function startAndDrop(sb: Sandbox, pidFile: string, extra: 'plain' | 'stdin' | 'iterated' = 'plain'): void {
  const proc = sb.stream(['sh', '-c', 'echo $$ > "$1"; exec sleep 1000', 'sh', pidFile], {
    ...(extra === 'stdin' ? { stdin: 'pipe' as const } : {}),
  });
  if (extra === 'stdin') void proc.stdin!.write('some input\n').catch(() => undefined);
  if (extra === 'iterated') {
    const iterator = proc[Symbol.asyncIterator]();
    void iterator.next().catch(() => undefined);
  }
}

describe('a Process dropped without disposal', () => {
  it.each(['plain', 'stdin', 'iterated'] as const)(
    'is terminated by the finalizer, which warns naming the command (%s)',
    async (extra) => {
      const sb = testSandbox();
      const pidFile = join(dir, `pid-${extra}`);
      startAndDrop(sb, pidFile, extra);
      expect(await eventually(() => readPid(pidFile) !== undefined, 10_000)).toBe(true);
      const pid = readPid(pidFile)!;
      expect(isAlive(pid)).toBe(true);

      const deadline = Date.now() + 10_000;
      while (leakWarnings().length === 0 && Date.now() < deadline) await collectGarbage(1);
      const [warning] = leakWarnings();
      expect(warning, 'no SANDSTREAM_PROCESS_LEAKED warning').toBeDefined();
      expect(warning!.message).toContain('"sh","-c"');
      expect(warning!.message).toContain('sleep 1000');
      expect(await eventually(() => !isAlive(pid), TEARDOWN_BOUND_MS)).toBe(true);
    },
  );
});

describe('the finalizer leaves alone', () => {
  it('a Process iterated through a temporary in for-await', async () => {
    const sb = testSandbox();
    const seen: string[] = [];
    for await (const chunk of sb.stream(['sh', '-c', 'for i in 1 2 3 4 5; do echo $i; sleep 0.05; done'])) {
      seen.push(new TextDecoder().decode(chunk.data));
      await collectGarbage(2);
    }
    expect(seen.join('')).toBe('1\n2\n3\n4\n5\n');
    expect(leakWarnings()).toEqual([]);
  });

  it('a Process whose wait() is being awaited', async () => {
    const sb = testSandbox();
    const flag = join(dir, 'wait-flag');
    const pending: Promise<ExecResult> = sb
      .stream(['sh', '-c', 'while [ ! -e "$1" ]; do sleep 0.02; done; exit 4', 'sh', flag])
      .wait();
    await collectGarbage(10);
    // Let it finish only now.
    writeFileSync(flag, '');
    const result = await pending;
    expect(result.exitCode).toBe(4);
    expect(result.signal).toBeNull();
    expect(leakWarnings()).toEqual([]);
  });

  it('a Process whose stdin writer is still held', async () => {
    const sb = testSandbox();
    const writer = sb.stream(['sh', '-c', 'read line; test "$line" = hello'], { stdin: 'pipe' }).stdin!;
    await collectGarbage(10);
    await writer.write('hello\n');
    await writer.end();
    expect(leakWarnings()).toEqual([]);
  });

  it('disposed Processes and ones that exited by themselves', async () => {
    const sb = testSandbox();
    await (async () => {
      await using proc = sb.stream(['sleep', '1000']);
      void proc;
    })();
    await (async () => {
      const proc = sb.stream(['true']);
      await proc.wait();
    })();
    await collectGarbage(10);
    expect(leakWarnings()).toEqual([]);
  });
});
