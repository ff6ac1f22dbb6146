import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LINE_CHARS } from '../src/index.js';
import { connect, execWithProgress, outcome, type Session } from './harness.js';

const SIZE = 64 * 1024 * 1024;
const BUDGET = 4096;
// Holding the output would add 64 MiB at least. The server's peak grows by
// about 34 MiB whatever the size (measured: the same for 64 and 256 MiB):
// the heap's young generation and the pipes' buffers, not the output.
const BOUND = (SIZE * 3) / 4;

/** The server's peak resident memory so far, in bytes (VmHWM). */
function peakRss(pid: number): number {
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) * 1024;
}

let session: Session;
beforeAll(async () => {
  session = await connect(['--adapter', 'local', '--output-budget', String(BUDGET)]);
});
afterAll(async () => {
  await session?.client.close();
});

describe('64 MiB of output with a small output budget', () => {
  it('keeps the head and the tail within the budget, flags the truncation, and the server holds far less than the output (no progress requested)', async () => {
    const before = peakRss(session.pid);
    const result = await session.client.callTool(
      { name: 'sandbox_exec', arguments: { command: `yes 'a line of output, repeated' | head -c ${SIZE}; echo the end` } },
      undefined,
      { timeout: 120_000 },
    );
    const out = outcome(result as never);
    expect(out).toMatchObject({ exitCode: 0, truncated: true, timedOut: false });
    expect(out.text.length).toBeLessThanOrEqual(BUDGET);
    expect(out.stdout.startsWith('a line of output, repeated\n')).toBe(true);
    // head -c ends inside a line: the tail is whole lines, then that part of one and the echo.
    expect(out.stdout).toMatch(/\]\na line of output, repeated\n(a line of output, repeated\n)+[a-z ,]*the end\n$/);
    expect(out.omitted.stdout.bytes).toBeGreaterThan(SIZE - BUDGET);
    expect(peakRss(session.pid) - before).toBeLessThan(BOUND);
  });

  it('with progress: every byte past the cap is still notified, a line without newline in bounded pieces, and the server stays bounded', async () => {
    const before = peakRss(session.pid);
    let notified = 0;
    let chars = 0;
    let partial = 0;
    let longest = 0;
    const { result } = await execWithProgress(
      session.client,
      { command: `head -c ${SIZE} /dev/zero | tr '\\0' x` },
      (line) => {
        notified += 1;
        chars += line.text.length;
        longest = Math.max(longest, line.text.length);
        if (line.partial) partial += 1;
      },
      { timeout: 120_000, keep: false },
    );
    const out = outcome(result);
    expect(out).toMatchObject({ exitCode: 0, truncated: true });
    // One line without a newline: cut by characters, around the marker.
    expect(out.text.length).toBeLessThanOrEqual(BUDGET);
    expect(out.stdout).toMatch(/^x{1000,}\n\[\.\.\. 0 lines \([\d,]+ bytes\) of stdout left out here\. .*\]\nx{1000,}$/);
    expect(chars).toBe(SIZE);
    expect(longest).toBe(MAX_LINE_CHARS);
    expect(notified).toBe(SIZE / MAX_LINE_CHARS);
    expect(partial).toBe(notified - 1);
    expect(peakRss(session.pid) - before).toBeLessThan(BOUND);
  });
});
