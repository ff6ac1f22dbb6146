// The command's end (its leader's exit) and the end of its process tree: once the leader has
// exited, winding the tree down neither turns the result into a timeout nor outlasts the
// runtime's SIGKILL.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, procState, testSandbox } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sandstream-leader-exit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the end of the command and the end of its tree', () => {
  it('a command whose leader exited 0 before the timeout is not reported as timed out while its tree is wound down', async () => {
    // The background child ignores SIGTERM, so winding it down takes the whole grace period,
    // which ends after the timeout would have fired.
    const sb = testSandbox({ graceMs: 1_500 });
    const result = await sb.run(['sh', '-c', '(trap "" TERM; while :; do sleep 0.05; done) & sleep 0.1; echo done; exit 0'], {
      timeout: 1_000,
    });
    expect(result).toMatchObject({ exitCode: 0, signal: null, timedOut: false });
    expect(result.stdoutText).toBe('done\n');
  });

  it('SIGKILL from the runtime ends the wait for a pipe held outside the group, without a second grace period', async () => {
    // The leader exits at once; a process that left the group keeps the output pipe. With a
    // 60 s grace period the driver would wait that long before giving up on the pipe; the
    // runtime's SIGKILL (here through kill()) must end that wait instead.
    const sb = testSandbox({ graceMs: 60_000 });
    const script = [
      'setsid sh -c \'echo $$ > "$1/daemon"; exec sleep 30\' sh "$1" &',
      'while [ ! -s "$1/daemon" ]; do sleep 0.01; done',
      'echo leader-done',
    ].join('\n');
    const proc = sb.stream(['sh', '-c', script, 'sh', dir]);
    const iterator = proc[Symbol.asyncIterator]();
    await iterator.next();
    try {
      // The leader printed its line; the case is about the time after it has exited (and was
      // reaped), which on a loaded machine can come a little later.
      expect(await eventually(() => procState(proc.pid!) === undefined, 10_000)).toBe(true);
      await proc.kill('SIGKILL');
      // A bound that only proves the 60 s linger did not run; the figure itself is not measured here.
      const result = await Promise.race([
        proc.wait(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('still waiting for the held pipe after 15 s')), 15_000)),
      ]);
      expect(result).toMatchObject({ exitCode: 0, signal: null });
    } finally {
      process.kill(Number(readFileSync(join(dir, 'daemon'), 'utf8')), 'SIGKILL');
      await proc[Symbol.asyncDispose]();
    }
  });
});
