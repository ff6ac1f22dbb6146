// bubblewrap's one-shot sandbox, the baseline of the isolated mode's
// create, run(['true']), close(): the same namespaces (PID, mount, network,
// IPC, UTS; a user namespace where bwrap needs one), the host's root
// read-only, a /dev and /proc of its own, a private /tmp, one command.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export const BWRAP_ARGS = ['--ro-bind', '/', '/', '--unshare-all', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', 'true'];

/** `bwrap` on PATH, or undefined. */
function findBwrap() {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, 'bwrap');
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * The bubblewrap to measure against, or why there is none: absent, or
 * present but refusing this machine's namespaces (its own words).
 */
export function bubblewrap() {
  const path = findBwrap();
  if (path === undefined) {
    return { absent: '`bwrap` was not found on PATH (Debian and Ubuntu: apt-get install bubblewrap)' };
  }
  const trial = spawnSync(path, BWRAP_ARGS, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 10_000 });
  if (trial.status !== 0) {
    return { absent: `${path} is present but failed here: ${trial.stderr.trim() || trial.error?.message || `exit ${trial.status ?? trial.signal}`}` };
  }
  const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return { path, version };
}

/** One `bwrap ... true`, from spawn to its end (pipes closed), in ms. */
export async function bwrapOnce(path, now) {
  const t0 = now();
  const child = spawn(path, BWRAP_ARGS, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.resume();
  child.stderr.resume();
  const code = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const ms = now() - t0;
  if (code !== 0) throw new Error(`bwrap one-shot: exit ${code}`);
  return ms;
}
