/**
 * The check that a sandbox's root came out read-only, made by this process
 * from the sandbox's own mount table once its init has pivoted (so the
 * init starts one program fewer), before any command may enter.
 *
 * The mount table worked out in layout.ts remounts read-only every mount
 * of the host's root it knows of. A mount the host made between that table
 * and `unshare` came along with the recursive binds, writable; it is found
 * here, in `/proc/<init>/mountinfo` (mount points relative to the init's
 * root, that is the sandbox's `/`), and remounted read-only from inside the
 * sandbox's mount namespace, keeping its other flags.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { escapePath, readOnly, unescapePath } from './layout.js';
import type { IsolationSupport } from './probe.js';

/** A mount of the sandbox that should be read-only and is not: where (unescaped), and its per-mount flags. */
export interface StrayMount {
  readonly point: string;
  readonly flags: string;
}

function under(point: string, dir: string): boolean {
  return point === dir || point.startsWith(dir === '/' ? '/' : `${dir}/`);
}

/**
 * The writable mounts of a sandbox's mount table (`mountinfo`, as
 * /proc/<pid>/mountinfo spells it, after the pivot) that are meant to be
 * read-only: every one except the devices and mounts below /dev, /proc,
 * /run, /tmp, the work directory and the caller's writable mounts, with
 * what lies below each of them.
 */
export function strayWritableMounts(mountinfo: string, workDir: string, writable: readonly string[]): StrayMount[] {
  const open = ['/proc', '/run', '/tmp', workDir, ...writable].map(escapePath);
  const strays: StrayMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 6) continue;
    const point = fields[4]!;
    const flags = fields[5]!;
    if (point.startsWith('/dev/') || open.some((dir) => under(point, dir))) continue;
    if (/^ro(,|$)/.test(flags)) continue;
    strays.push({ point: unescapePath(point), flags });
  }
  return strays;
}

/** The stray mounts of the sandbox whose init is `init` (host pid); an unreadable table is an error. */
export function strayMountsOf(init: number, workDir: string, writable: readonly string[]): StrayMount[] {
  return strayWritableMounts(readFileSync(`/proc/${init}/mountinfo`, 'latin1'), workDir, writable);
}

/**
 * Makes the sandbox's root read-only where it is not ({@link strayMountsOf}):
 * each stray mount remounted read-only by `mount`, entered into the
 * sandbox's mount namespace (and user namespace, where it has one). Normally
 * there is none, and nothing runs. Rejects, saying which mount, when a
 * remount fails or the mount is still writable afterwards.
 */
export async function secureRoot(init: number, support: IsolationSupport, workDir: string, writable: readonly string[]): Promise<void> {
  let strays = strayMountsOf(init, workDir, writable);
  if (strays.length === 0) return;
  for (const stray of strays) await remountReadOnly(init, support, stray);
  strays = strayMountsOf(init, workDir, writable);
  if (strays.length > 0) throw new Error(`the host's root stayed writable at ${strays.map((stray) => JSON.stringify(stray.point)).join(', ')}`);
}

function remountReadOnly(init: number, support: IsolationSupport, stray: StrayMount): Promise<void> {
  const user = support.via === 'user-namespace' ? ['--user', '--preserve-credentials'] : [];
  // --no-mtab: nothing written into the sandbox's /run (libmount's utab).
  const args = ['--target', String(init), ...user, '--mount', '--', support.mount, '--no-mtab', '-o', readOnly(stray.flags), stray.point];
  return new Promise((resolve, reject) => {
    const child = spawn(support.nsenter, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' } });
    let said = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (said += text));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`remounting ${JSON.stringify(stray.point)} read-only failed (${signal ?? `exit ${code}`}): ${said.trim()}`));
    });
  });
}
