/**
 * The CLI ends when its report is written, with the report's exit code, even
 * when the adapter leaves something running that would keep Node alive; it
 * names what was left open. A run that hung here would hit the test timeout.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { markedProcesses } from '@sandstream/test-support/processes';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const MARKER = 'SANDSTREAM_LEAK_TEST';
const markers: string[] = [];

afterEach(() => {
  // The fixtures leak on purpose; nothing of theirs outlives the test.
  for (const marker of markers.splice(0)) {
    for (const { pid } of markedProcesses(MARKER, marker)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
});

/** Runs the CLI to its exit; resolves with its code and output. */
function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; marker: string }> {
  const marker = randomUUID();
  markers.push(marker);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, [MARKER]: marker, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr, marker }));
  });
}

describe('the CLI exits once the report is written', () => {
  test('against an adapter whose close() leaks its commands: exit 1, the leak named and killed', { timeout: 60_000 }, async () => {
    const out = await run([fixture('leaky-close.mjs'), '--include', 'teardown.close']);
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/✗ teardown\.close/);
    expect(out.stdout).toMatch(/close\(\) resolved while a Process it started still runs/);
    expect(out.stdout).toMatch(/the kit had to kill \d+ process(es)? it had left running/);
    expect(out.stdout).toMatch(/DOES NOT CONFORM/);
    // What the case started is gone, although the adapter never terminated it.
    expect(markedProcesses(MARKER, out.marker).filter((p) => p.cmdline.includes('sandstream-close-'))).toEqual([]);
  });

  test('against an adapter that leaves a connection open: the report\'s code, and what was still open', { timeout: 60_000 }, async () => {
    const out = await run([fixture('leaky-connection.mjs'), '--include', 'stream.synchronous']);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/PASSED/);
    expect(out.stderr).toMatch(/the adapter left \d+ ChildProcess \(pid \d+: sleep 600[;)].* open after the run; exiting with 0 anyway/);
  });
});
