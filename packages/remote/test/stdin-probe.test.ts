// The stdin probe (src/sh/stdin-probe.sh), run on this host as a transport runs it in a sandbox:
// a command reading a pipe fed from outside its tree holds its standard input; one that closed it
// does not, even while it runs on and its processes share pipes among themselves.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@sandstream/test-support/timing';
import { STDIN_HELD, stdinProbeArgv, TAG_VARIABLE } from '../src/index.js';

const started: ChildProcess[] = [];
afterEach(() => {
  // Each command leads a group of its own (detached): the group goes, by its number.
  for (const child of started.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/** `script` run tagged, its standard input a pipe whose writer (an untagged `sleep`) is outside its tree, as an exec's is. */
function command(script: string): { id: string; child: ChildProcess } {
  const id = `probe-${randomUUID()}`;
  const child = spawn('sh', ['-c', `sleep 30 | env "${TAG_VARIABLE}=$0" sh -c "$1"`, id, script], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  started.push(child);
  return { id, child };
}

function probe(id: string): number | null {
  const [shell, ...args] = stdinProbeArgv('/bin/sh', id);
  return spawnSync(shell!, args, { stdio: 'ignore' }).status;
}

describe('the stdin probe', () => {
  it('finds a standard input a process of the command still reads', async () => {
    const { id, child } = command('echo up; cat > /dev/null');
    await new Promise((resolve) => child.stdout!.once('data', resolve));
    expect(probe(id)).toBe(STDIN_HELD);
  });

  it('finds none once the command closed it, its own pipes notwithstanding', async () => {
    const { id, child } = command('exec 0<&-; echo up; sleep 30 | cat > /dev/null');
    await new Promise((resolve) => child.stdout!.once('data', resolve));
    // The pipeline's processes are up (they share a pipe of their own) before the probe counts.
    await waitFor(() => spawnSync('sh', ['-c', `grep -lz "^${TAG_VARIABLE}=${id}\\$" /proc/[0-9]*/environ | wc -l`], { encoding: 'utf8' }).stdout.trim() === '3', 10_000, 'the pipeline');
    expect(probe(id)).toBe(0);
  });
});
