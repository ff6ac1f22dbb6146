/**
 * Looking into a gVisor container from the host. Its processes are not the
 * host's (gVisor's kernel runs them in its own process), so the host's
 * `/proc` finds none of them: a check that "nothing is left" there would
 * pass whatever is left. The container's own `/proc` is read instead,
 * through `runsc exec`, which talks to the sandbox directly: it works while
 * dockerd is stopped (SIGSTOP), as a fault test needs.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { MarkedProcess } from '@sandstream/test-support/processes';
import { runscRoot, type TestEngine } from '../src/engine/index.js';

const run = promisify(execFile);

/**
 * Prints `<pid> <argv words>` of each process whose environment has the mark, the zombies (whose
 * environment reads empty) aside; the scan itself carries no mark.
 */
const SCAN = 'for f in $(grep -lzx -e "$1" /proc/[0-9]*/environ 2>/dev/null); do p=${f#/proc/}; p=${p%%/*}; printf "%s " "$p"; tr "\\0\\n" "  " < "/proc/$p/cmdline"; echo; done';

/** `runsc --root ... ARGS` for the engine's containers; rejects with its output when it fails. */
async function runsc(engine: TestEngine, args: string[]): Promise<string> {
  const root = runscRoot(join(engine.dir, 'exec'));
  if (root === undefined) throw new Error(`no runsc state under ${engine.dir}/exec: no gVisor container was started there`);
  const { stdout } = await run('runsc', ['--root', root, ...args], {
    timeout: 10_000,
  });
  return stdout;
}

/** Whether the gVisor sandbox of the container still runs (a killed or removed one is stopped or unknown to runsc). */
async function sandboxRuns(engine: TestEngine, id: string): Promise<boolean> {
  try {
    return (JSON.parse(await runsc(engine, ['state', id])) as { status?: string }).status === 'running';
  } catch {
    return false;
  }
}

/**
 * The live processes inside the gVisor container `id` with `name=value` in
 * their environment. A container whose sandbox has stopped holds none: its
 * kernel, and every process of it, is gone.
 */
export async function markedInGvisor(engine: TestEngine, id: string, name: string, value: string): Promise<MarkedProcess[]> {
  let out: string;
  try {
    out = await runsc(engine, ['exec', id, 'sh', '-c', SCAN, 'scan', `${name}=${value}`]);
  } catch (error) {
    if (!(await sandboxRuns(engine, id))) return [];
    throw error;
  }
  return out
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [pid = '', ...words] = line.trim().split(' ');
      return { pid: Number(pid), cmdline: words.join(' ') };
    });
}
