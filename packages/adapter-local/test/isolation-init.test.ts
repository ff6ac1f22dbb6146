/**
 * The isolated mode's init and the check that follows it: the host's root
 * must come out read-only even where the mount table worked out in this
 * process does not know a mount (one the host made between the table and
 * `unshare`). The check of the init's own mount table, made by this process
 * once the init is ready (root-check.ts), then remounts it. Run here against
 * a table with every read-only remount taken out, in a mount namespace that
 * holds mounts the table never saw, one of them at a path with a space.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { firstChild } from '../src/isolation/environment.js';
import { mountTable, removeSkeletons, skeletonFor } from '../src/isolation/layout.js';
import { probe, type IsolationSupport } from '../src/isolation/probe.js';
import { secureRoot, strayWritableMounts } from '../src/isolation/root-check.js';
import { INIT_SCRIPT } from '../src/isolation/scripts.js';
import { eventually, isAlive } from './helpers.js';

const found = probe();
const support = found instanceof Error ? undefined : (found as IsolationSupport);
const blocker = support === undefined ? `isolation is unavailable here: ${(found as Error).message}` : !existsSync('/usr/local') ? 'this machine has no /usr/local to mount over' : undefined;

const dirs: string[] = [];
const pids: number[] = [];
afterEach(() => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  // No sandbox of this process holds the skeleton made here.
  removeSkeletons();
});

/** Mount point and per-mount flags of each mount a process sees, paths as /proc spells them. */
function mountsOf(pid: number): Map<string, string> {
  const mounts = new Map<string, string>();
  for (const line of readFileSync(`/proc/${pid}/mountinfo`, 'latin1').trim().split('\n')) {
    const fields = line.split(' ');
    mounts.set(fields[4]!, fields[5]!);
  }
  return mounts;
}

describe("the isolated mode's init", () => {
  unless(it, blocker)('remounts read-only what the mount table left writable, paths with a space included', async () => {
    const skeleton = skeletonFor(support!, '/workspace');
    const full = readFileSync(mountTable(skeleton, support!, '/workspace'), 'utf8');
    const dir = mkdtempSync(join(tmpdir(), 'sandstream-init-test-'));
    dirs.push(dir);
    const table = join(dir, 'table');
    writeFileSync(table, full.split('\n').filter((line) => !line.includes(' remount,')).join('\n'));
    // Mounts only this test's namespaces have, made before the init starts: its table never saw them.
    const outer = [
      ...(support!.via === 'user-namespace' ? ['--user', '--map-root-user'] : []),
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      // Not exec'd: this shell stays behind in the namespace the init is made from.
      'mount -t tmpfs outer /usr/local && mkdir "/usr/local/with space" && mount -t tmpfs inner "/usr/local/with space" && "$@"',
      'sh',
    ];
    const inner = ['unshare', '--pid', '--fork', '--mount', '--propagation', 'private', '--ipc', '--uts', '--net', '--'];
    const child = spawn(
      support!.unshare,
      [...outer, ...inner, '/bin/sh', '-c', INIT_SCRIPT, 'sandstream-init', skeleton.path, '1', table, '250'],
      { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], detached: true },
    );
    pids.push(-child.pid!);
    let out = '';
    let err = '';
    child.stdout!.on('data', (data: Buffer) => (out += String(data)));
    child.stderr!.on('data', (data: Buffer) => (err += String(data)));
    expect(await eventually(() => out.includes('ready\n') || child.exitCode !== null, 20_000), err).toBe(true);
    expect(out, err).toBe('pivoted\nready\n');
    const init = firstChild(firstChild(child.pid!)!)!;
    // The control: as the init leaves them, the mounts its table never saw are writable.
    const before = mountsOf(init);
    expect(before.get('/usr/local')).toMatch(/^rw/);
    expect(before.get('/usr/local/with\\040space')).toMatch(/^rw/);
    await secureRoot(init, support!, '/workspace', []);
    const inside = mountsOf(init);
    expect(inside.get('/usr/local')).toMatch(/^ro(,|$)/);
    expect(inside.get('/usr/local/with\\040space')).toMatch(/^ro(,|$)/);
    for (const [point, flags] of inside) {
      if (/^\/(dev\/|proc$|proc\/|run$|tmp$|workspace$)/.test(point)) continue;
      expect(flags, point).toMatch(/^ro(,|$)/);
    }
    // Nothing of the check is left where a command could see it.
    expect(readdirSync(`/proc/${init}/root/run`)).toEqual([]);
    (child.stdio[3] as Readable).destroy();
    expect(await eventually(() => !isAlive(init), 5_000)).toBe(true);
  });
});

describe("the check of a sandbox's mount table", () => {
  const line = (point: string, flags: string): string => `36 35 98:0 / ${point} ${flags} master:1 - ext3 /dev/root rw`;

  it('names every writable mount outside the writable places, unescaping its path', () => {
    const table = [
      line('/', 'ro,relatime'),
      line('/usr', 'rw,nosuid'),
      line('/usr/local/with\\040space', 'rw'),
      line('/tmpfiles', 'rw'),
      line('/workspaces', 'rw'),
      line('/data', 'rw'),
      line('/data/below', 'rw'),
      line('/dev', 'rw'),
    ].join('\n');
    expect(strayWritableMounts(table, '/workspace', [])).toEqual([
      { point: '/usr', flags: 'rw,nosuid' },
      { point: '/usr/local/with space', flags: 'rw' },
      { point: '/tmpfiles', flags: 'rw' },
      { point: '/workspaces', flags: 'rw' },
      { point: '/data', flags: 'rw' },
      { point: '/data/below', flags: 'rw' },
      { point: '/dev', flags: 'rw' },
    ]);
    // The caller's writable mounts, and what lies below them, are meant to be writable.
    expect(strayWritableMounts(table, '/workspace', ['/data']).map((stray) => stray.point)).not.toContain('/data/below');
  });

  it('leaves the devices, /proc, /run, /tmp, the work directory and what is read-only alone', () => {
    const table = [
      line('/', 'ro'),
      line('/dev/null', 'rw'),
      line('/dev/pts', 'rw'),
      line('/proc', 'rw'),
      line('/proc/sys', 'ro'),
      line('/run', 'rw'),
      line('/tmp', 'rw'),
      line('/tmp/x', 'rw'),
      line('/work\\040dir', 'rw'),
      line('/usr', 'ro,nosuid'),
    ].join('\n');
    expect(strayWritableMounts(table, '/work dir', [])).toEqual([]);
  });
});
