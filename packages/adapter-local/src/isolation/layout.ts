/**
 * The host side of an isolated sandbox's filesystem: the root skeleton it
 * pivots into and the mount table its init hands to one `mount --all`.
 *
 * Every program the init runs costs a fork and an exec (a millisecond or
 * more each); the mounts themselves cost microseconds. So what can be
 * known before the namespaces exist is worked out here, in this process:
 * the skeleton's mount points and links are made once per process, and each
 * sandbox's mounts (binds, read-only remounts, /dev, /proc, the private
 * tmpfs mounts) become one table that a single `mount --all` applies. Once
 * the init has pivoted, this process checks in the init's mount table that
 * every mount of the host's root came out read-only, and has any that did
 * not (a host mount made meanwhile) remounted (root-check.ts).
 */
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeWhenThisProcessEnds } from './janitor.js';
import type { IsolationSupport } from './probe.js';

/** Top-level host entries the sandbox gets its own of. */
const PRIVATE = new Set(['proc', 'dev', 'tmp', 'run']);
/**
 * The host's system directories, the only top-level entries of the host the
 * sandbox sees (read-only): programs, libraries and configuration, not
 * /home, /root, /var, /srv, /mnt, /opt or /sys, where the host keeps its
 * data, its accounts' keys and its other mounts. `mounts` binds more.
 */
const SYSTEM = new Set(['usr', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32', 'etc']);
/** Host devices bound into the sandbox's /dev. */
export const DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'] as const;

/** One top-level entry of the host's root, as the skeleton mirrors it. */
interface Entry {
  readonly name: string;
  readonly kind: 'dir' | 'file' | 'link';
  /** A link's target. */
  readonly target?: string;
}

/** A root skeleton: its host path and what it mirrors. */
export interface Skeleton {
  readonly path: string;
  readonly entries: readonly Entry[];
  /** Paths under /etc that the sandbox sees empty: those not every account may read. */
  readonly hidden: readonly Hidden[];
  /** An empty file and an empty directory beside the skeleton, bound over what is hidden. */
  readonly emptyFile: string;
  readonly emptyDir: string;
}

/** A path of the host's /etc hidden from the sandbox. */
interface Hidden {
  readonly path: string;
  readonly kind: 'file' | 'dir';
}

/**
 * What of the host's /etc no account but its owner (or group) may read:
 * `/etc/shadow`, `/etc/gshadow`, the SSH host's private keys, `/etc/ssl/private`,
 * a database's access rules. The sandbox's root (the host's, where this
 * process is root) would read them; it sees them empty instead. A directory
 * that not everyone may list or enter is hidden whole. Found when the
 * skeleton is made (once per process, a few milliseconds): a file made so
 * later is hidden from the sandboxes of a later skeleton only.
 */
function hiddenUnder(directory: string): Hidden[] {
  const hidden: Hidden[] = [];
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return hidden;
  }
  for (const name of names.sort()) {
    const path = `${directory}/${name}`;
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      continue; // gone meanwhile
    }
    if (stat.isSymbolicLink()) continue;
    if (stat.isDirectory()) {
      if ((stat.mode & 0o005) !== 0o005) hidden.push({ path, kind: 'dir' });
      else hidden.push(...hiddenUnder(path));
    } else if ((stat.mode & 0o004) === 0) {
      hidden.push({ path, kind: 'file' });
    }
  }
  return hidden;
}

/**
 * Escapes a path as /proc/self/mountinfo does, and as libmount reads a
 * mount table's fields back: space, tab, newline and backslash as `\ooo`.
 */
export function escapePath(path: string): string {
  return path.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

/** The inverse of {@link escapePath}. */
export function unescapePath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** The host root's system entries, as the sandbox mirrors them (links copied, the rest bound). */
function hostEntries(): Entry[] {
  const entries: Entry[] = [];
  for (const name of readdirSync('/').sort()) {
    if (!SYSTEM.has(name)) continue;
    let stat;
    try {
      stat = lstatSync(`/${name}`);
    } catch {
      continue; // gone meanwhile
    }
    if (stat.isSymbolicLink()) entries.push({ name, kind: 'link', target: readlinkSync(`/${name}`) });
    else entries.push({ name, kind: stat.isDirectory() ? 'dir' : 'file' });
  }
  return entries;
}

const skeletons = new Map<string, Skeleton>();

/**
 * The skeleton for the host's root as it is now: made once per process
 * (and again should the host's top-level entries change), shared by every
 * sandbox of the process, each of which binds it read-only as its `/` in
 * its own mount namespace. It holds only empty mount points and links; no
 * sandbox can write into it. Kept for the process's sandboxes to come, and
 * removed by {@link removeSkeletons} at exit, or once the process has
 * ended without its exit hook (janitor.ts).
 */
export function skeletonFor(support: IsolationSupport, workDir: string): Skeleton {
  const entries = hostEntries();
  const key = JSON.stringify([entries, support.devpts, workDir]);
  const known = skeletons.get(key);
  if (known !== undefined && existsSync(known.path)) return known;
  const state = mkdtempSync(join(tmpdir(), 'sandstream-'));
  removeWhenThisProcessEnds(state);
  const path = join(state, 'root');
  // Readable by every account: commands run as another `user` walk through it.
  mkdirSync(path, { mode: 0o755 });
  chmodSync(path, 0o755);
  const dir = (relative: string): void => void mkdirSync(join(path, relative), { recursive: true, mode: 0o755 });
  for (const entry of entries) {
    const at = join(path, entry.name);
    if (entry.kind === 'link') symlinkSync(entry.target!, at);
    else if (entry.kind === 'dir') dir(entry.name);
    else writeFileSync(at, '', { mode: 0o644 });
  }
  for (const name of PRIVATE) dir(name);
  if (!entries.some((entry) => entry.name === workDir.slice(1).split('/')[0])) dir(workDir.slice(1));
  for (const device of DEVICES) writeFileSync(join(path, 'dev', device), '', { mode: 0o644 });
  dir('dev/pts');
  dir('dev/shm');
  symlinkSync('/proc/self/fd', join(path, 'dev/fd'));
  for (const [name, fd] of [['stdin', 0], ['stdout', 1], ['stderr', 2]] as const) symlinkSync(`/proc/self/fd/${fd}`, join(path, 'dev', name));
  if (support.devpts) symlinkSync('pts/ptmx', join(path, 'dev/ptmx'));
  const real = realpathSync(path);
  const emptyFile = join(state, 'empty-file');
  const emptyDir = join(state, 'empty-dir');
  writeFileSync(emptyFile, '', { mode: 0o444 });
  mkdirSync(emptyDir, { mode: 0o555 });
  const hidden = entries.some((entry) => entry.name === 'etc' && entry.kind === 'dir') ? hiddenUnder('/etc') : [];
  const skeleton = { path: real, entries, hidden, emptyFile: realpathSync(emptyFile), emptyDir: realpathSync(emptyDir) };
  skeletons.set(key, skeleton);
  return skeleton;
}

/** Removes every skeleton this process made (its sandboxes are gone or going). */
export function removeSkeletons(): void {
  for (const skeleton of skeletons.values()) rmSync(join(skeleton.path, '..'), { recursive: true, force: true });
  skeletons.clear();
}

/** A mount of the host's mount table: where, and its per-mount flags other than rw/ro. */
interface HostMount {
  readonly point: string;
  readonly flags: string;
}

function hostMounts(mountinfo: string): HostMount[] {
  const mounts: HostMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 6) continue;
    mounts.push({ point: unescapePath(fields[4]!), flags: fields[5]! });
  }
  return mounts;
}

/** The remount options that make a mount with per-mount `flags` read-only, keeping the rest (a user namespace may not clear them). */
export function readOnly(flags: string): string {
  const rest = flags.split(',').filter((flag) => flag !== 'rw' && flag !== 'ro');
  return ['remount', 'bind', 'ro', ...rest].join(',');
}

/** The flags of the host mount that holds `path`: the last-mounted of the longest mount point above it. */
function flagsAt(mounts: readonly HostMount[], path: string): string {
  let best: HostMount | undefined;
  for (const mount of mounts) {
    const above = mount.point === '/' || path === mount.point || path.startsWith(`${mount.point}/`);
    if (above && (best === undefined || mount.point.length >= best.point.length)) best = mount;
  }
  return best?.flags ?? 'rw';
}

/**
 * The path of the file holding the mount table of one sandbox, in the order `mount --all` applies it:
 * the skeleton bound onto itself (a mount point to pivot into), each host
 * directory bound recursively (`/sys` without the mounts below it where the
 * probe found that allowed), each host file and device bound, then every
 * one of these remounted read-only, mount by mount, with the flags the host
 * gives it; then a private devpts, a new procfs with /proc/sys read-only and
 * /proc/sysrq-trigger masked, private tmpfs mounts on /run, /tmp,
 * /dev/shm and the work directory; and where the probe found it works, a
 * sysfs of the sandbox's network namespace (unless it shares the host's:
 * `network`) over the old root's /sys, for the init to bring loopback up
 * through.
 */
export function mountTable(skeleton: Skeleton, support: IsolationSupport, workDir: string, network = false): string {
  // Worked out again only when something it is made from has changed (the host's mount table, say).
  const mountinfo = readFileSync('/proc/self/mountinfo', 'latin1');
  // A skeleton's path stands for its entries (another set of entries gets another skeleton).
  const flags = [support.devpts, support.sysfsLoopback, network, existsSync('/proc/sysrq-trigger'), existsSync('/sys')];
  const key = [skeleton.path, workDir, flags.map(Number).join(''), mountinfo].join('\0');
  const known = tables.get(key);
  if (known !== undefined && existsSync(known)) return known;
  const path = tableFile(skeleton, mountLines(skeleton, support, workDir, network, mountinfo));
  tables.clear();
  tables.set(key, path);
  return path;
}

/** The last mount table's file, by what it was made from. */
const tables = new Map<string, string>();

/**
 * The host file holding a mount table (`mount --fstab` reads only regular
 * files), kept beside the skeleton: sandboxes of the same host layout share
 * it, so none writes a file of its own.
 */
function tableFile(skeleton: Skeleton, table: string): string {
  const path = join(skeleton.path, '..', `table-${createHash('sha256').update(table).digest('hex').slice(0, 32)}`);
  if (!existsSync(path)) {
    // Whole or not at all: a sandbox starting meanwhile never reads half a table.
    const partial = `${path}.${process.pid}.partial`;
    writeFileSync(partial, table, { mode: 0o600 });
    renameSync(partial, path);
  }
  return path;
}

function mountLines(skeleton: Skeleton, support: IsolationSupport, workDir: string, network: boolean, mountinfo: string): string {
  const root = skeleton.path;
  const mounts = hostMounts(mountinfo);
  const lines: string[] = [];
  const remounts: string[] = [];
  const line = (source: string, target: string, type: string, options: string): void => {
    lines.push(`${escapePath(source)} ${escapePath(target)} ${type} ${options} 0 0`);
  };
  const remount = (target: string, flags: string): void => {
    remounts.push(`none ${escapePath(target)} none ${readOnly(flags)} 0 0`);
  };
  line(root, root, 'none', 'bind');
  remount(root, flagsAt(mounts, root));
  for (const entry of skeleton.entries) {
    if (entry.kind === 'link') continue;
    const host = `/${entry.name}`;
    const recursive = entry.kind === 'dir';
    line(host, `${root}${host}`, 'none', recursive ? 'rbind' : 'bind');
    remount(`${root}${host}`, flagsAt(mounts, host));
    if (!recursive) continue;
    // The mounts below it came along: each is read-only only once remounted so.
    const seen = new Map<string, string>();
    for (const mount of mounts) if (mount.point.startsWith(`${host}/`)) seen.set(mount.point, mount.flags);
    for (const [point, flags] of seen) remount(`${root}${point}`, flags);
  }
  for (const hidden of skeleton.hidden) {
    line(hidden.kind === 'dir' ? skeleton.emptyDir : skeleton.emptyFile, `${root}${hidden.path}`, 'none', 'bind');
    remount(`${root}${hidden.path}`, flagsAt(mounts, skeleton.path));
  }
  for (const device of DEVICES) line(`/dev/${device}`, `${root}/dev/${device}`, 'none', 'bind');
  lines.push(...remounts);
  if (support.devpts) line('devpts', `${root}/dev/pts`, 'devpts', 'newinstance,ptmxmode=0666,mode=0620');
  line('proc', `${root}/proc`, 'proc', 'nosuid,nodev,noexec');
  // Kernel settings and triggers that are not per namespace stay out of reach.
  line(`${root}/proc/sys`, `${root}/proc/sys`, 'none', 'bind');
  lines.push(`none ${escapePath(`${root}/proc/sys`)} none remount,bind,ro,nosuid,nodev,noexec 0 0`);
  if (existsSync('/proc/sysrq-trigger')) line('/dev/null', `${root}/proc/sysrq-trigger`, 'none', 'bind');
  line('sandstream-run', `${root}/run`, 'tmpfs', 'mode=0755,nosuid,nodev');
  line('sandstream-tmp', `${root}/tmp`, 'tmpfs', 'mode=1777,nosuid,nodev');
  line('sandstream-shm', `${root}/dev/shm`, 'tmpfs', 'mode=1777,nosuid,nodev');
  line('sandstream-work', `${root}${workDir}`, 'tmpfs', 'mode=0777');
  // Over the old root's /sys, which goes with it: a sysfs of the sandbox's network namespace,
  // whose loopback the init brings up by writing its flags (no `ip` to start). Not with the
  // host's network, whose sysfs is mounted there already.
  if (!network && support.sysfsLoopback && existsSync('/sys')) line('sandstream-sys', '/sys', 'sysfs', 'nosuid,nodev,noexec');
  return `${lines.join('\n')}\n`;
}
