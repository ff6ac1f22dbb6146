/**
 * The output relay's own complaints never become the command's output: a
 * command ended while it was starting has its FIFOs removed before the relay
 * opens them, and `cat`'s "No such file or directory" used to arrive as the
 * command's stderr (found by the soak, packages/soak, seed 2 on e2b).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RELAY } from '../src/scripts.js';

const root = mkdtempSync(join(tmpdir(), 'sandstream-relay-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the output relay', () => {
  it('writes nothing of its own when the FIFOs are already gone', () => {
    // A group id no process has: the relay finds the tree gone at once.
    const result = spawnSync('sh', ['-c', RELAY, 'sandstream-relay', join(root, 'removed'), '2147483646'], { encoding: 'utf8', timeout: 10_000 });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('');
  });
});
