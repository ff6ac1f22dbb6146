// Behaviours a review of the adapter turned up: each test failed before its fix.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testSandbox } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sandstream-review-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the end of the command and the end of its tree', () => {
  it('a command whose leader exited 0 before the timeout is not reported as timed out while its tree is wound down', async () => {
    // The background child ignores SIGTERM, so winding it down takes the whole grace period,
    // which ends after the timeout would have fired.
    const sb = testSandbox({ graceMs: 800 });
    const result = await sb.run(['sh', '-c', '(trap "" TERM; while :; do sleep 0.05; done) & sleep 0.1; echo done; exit 0'], {
      timeout: 500,
    });
    expect(result).toMatchObject({ exitCode: 0, signal: null, timedOut: false });
    expect(result.stdoutText).toBe('done\n');
  });

  it('a pipe held outside the group does not add a second grace period to teardown', async () => {
    const graceMs = 1_000;
    const sb = testSandbox({ graceMs });
    const script = [
      // Leaves the group, keeps the output pipe, and records its own pid.
      'setsid sh -c \'echo $$ > "$1/daemon"; exec sleep 30\' sh "$1" &',
      'while [ ! -s "$1/daemon" ]; do sleep 0.01; done',
      'trap "" TERM; echo ready; while :; do sleep 0.05; done',
    ].join('\n');
    const proc = sb.stream(['sh', '-c', script, 'sh', dir]);
    const iterator = proc[Symbol.asyncIterator]();
    await iterator.next();
    const started = performance.now();
    await proc[Symbol.asyncDispose]();
    const elapsed = performance.now() - started;
    const daemon = Number(readFileSync(join(dir, 'daemon'), 'utf8'));
    process.kill(daemon, 'SIGKILL');
    // One grace period and the quiet-pipe polls, not two grace periods.
    expect(elapsed).toBeLessThan(graceMs * 1.8);
    expect((await proc.wait()).signal).toBe('SIGKILL');
  });
});

describe('environment', () => {
  it('passes a variable named __proto__ like any other', async () => {
    const sb = testSandbox();
    const env = JSON.parse('{"__proto__": "kept", "SANDSTREAM_OTHER": "also"}') as Record<string, string>;
    const result = await sb.run(['env'], { env });
    expect(result.stdoutText).toMatch(/^__proto__=kept$/m);
    expect(result.stdoutText).toMatch(/^SANDSTREAM_OTHER=also$/m);
  });
});
