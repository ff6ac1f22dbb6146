import { spawnSync } from 'node:child_process';
import { describeExhaustion } from '../exhaustion.js';
import { findUtility } from '../utilities.js';
import type { EntryTools } from './entry-env.js';

/**
 * The isolated mode cannot work on this machine. Thrown by
 * `createLocalSandbox({ isolation: 'namespaces' })`, never replaced by a
 * silent fallback to no isolation. `missing` names each thing that is
 * absent or refused, in words an operator can act on.
 */
export class IsolationUnavailable extends Error {
  readonly code = 'ISOLATION_UNAVAILABLE' as const;
  constructor(
    readonly missing: readonly string[],
    options?: ErrorOptions,
  ) {
    super(`isolation 'namespaces' is not available on this machine: ${missing.join('; ')}`, options);
    this.name = 'IsolationUnavailable';
  }
}

/** How the isolated mode gets its namespaces on this machine, and how its commands get their variables. */
export interface IsolationSupport extends EntryTools {
  /** `root`: this process may create namespaces itself; `user-namespace`: through an unprivileged user namespace. */
  readonly via: 'root' | 'user-namespace';
  readonly unshare: string;
  readonly nsenter: string;
  readonly setsid: string;
  readonly setpriv: string;
  readonly mount: string;
  readonly pivotRoot: string;
  /** Whether a private devpts instance can be mounted (the sandbox then has /dev/pts and /dev/ptmx). */
  readonly devpts: boolean;
  /**
   * Whether loopback can be brought up by writing its flags in a sysfs of the sandbox's network
   * namespace, by the init's shell itself; otherwise the init starts `ip` (refused in a user
   * namespace, where the flags file is not writable).
   */
  readonly sysfsLoopback: boolean;
}

const NAMESPACES = ['--pid', '--fork', '--mount', '--net', '--ipc', '--uts'];

let cached: IsolationSupport | IsolationUnavailable | undefined;

/** Answers that say this host was out of descriptors, processes or memory at the time: not kept, the next probe tries again. */
const transient = new WeakSet<IsolationUnavailable>();
let lastAttemptExhausted = false;

/**
 * What the trial finds besides the namespaces themselves, each tried where
 * the sandbox's init will do it; a refusal only leaves the feature out.
 */
const FEATURES = String.raw`mount -t tmpfs probe /tmp && mount -t proc proc /proc || exit
mkdir /tmp/pts /tmp/netsys
if mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /tmp/pts 2>/dev/null; then echo devpts; fi
if mount -t sysfs sandstream-sys /tmp/netsys 2>/dev/null && { echo 0x9 >/tmp/netsys/class/net/lo/flags; } 2>/dev/null; then echo sysfs-loopback; fi
[ -n "${"${BASH_VERSION-}${KSH_VERSION-}${ZSH_VERSION-}"}" ] || echo export-shell
for tool in /usr/bin/env /bin/env; do
  if [ "$(SANDSTREAM_PROBE=x "$tool" -i -S '-- "A=${"${SANDSTREAM_PROBE}"}"' /bin/sh -c 'echo "$A"' 2>/dev/null)" = x ]; then echo "env-split $tool"; break; fi
done
:`;

/** The features found, or why the namespaces cannot be made. */
function attempt(unshare: string, extra: readonly string[]): { features: string[] } | { error: string } {
  const result = spawnSync(unshare, [...extra, ...NAMESPACES, '--propagation', 'private', '--', '/bin/sh', '-c', FEATURES], {
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 10_000,
    encoding: 'utf8',
  });
  const exhausted = result.error === undefined ? undefined : describeExhaustion(result.error);
  if (exhausted !== undefined) lastAttemptExhausted = true;
  if (result.error !== undefined) return { error: exhausted ?? result.error.message };
  if (result.status === 0) return { features: result.stdout.split('\n') };
  const text = result.stderr.trim().split('\n').pop() ?? '';
  return { error: text === '' ? `exit ${result.status ?? result.signal}` : text };
}

function supported(
  via: IsolationSupport['via'],
  tools: Omit<IsolationSupport, 'via' | 'devpts' | 'sysfsLoopback' | keyof EntryTools>,
  features: readonly string[],
): IsolationSupport {
  return {
    via,
    ...tools,
    devpts: features.includes('devpts'),
    sysfsLoopback: features.includes('sysfs-loopback'),
    exportShell: features.includes('export-shell'),
    envSplit: features.find((feature) => feature.startsWith('env-split '))?.slice('env-split '.length),
  };
}

/**
 * Finds out, once per process, whether and how the isolated mode can work:
 * the util-linux programs it runs, then a trial `unshare` of every namespace
 * the mode uses, first directly (root), then inside a new user namespace.
 */
export function probeIsolation(): IsolationSupport {
  cached ??= probe();
  if (cached instanceof IsolationUnavailable) {
    const refusal = cached;
    if (transient.has(refusal)) cached = undefined;
    throw refusal;
  }
  return cached;
}

/**
 * The probe itself, uncached; `find` locates a util-linux program (tests
 * pass one that finds nothing).
 */
export function probe(find: (name: string) => string | undefined = findUtility): IsolationSupport | IsolationUnavailable {
  if (process.platform !== 'linux') {
    return new IsolationUnavailable([`Linux namespaces (this is ${process.platform})`]);
  }
  const tools = {
    unshare: find('unshare'),
    nsenter: find('nsenter'),
    setsid: find('setsid'),
    setpriv: find('setpriv'),
    mount: find('mount'),
    pivotRoot: find('pivot_root'),
  };
  const absent = Object.entries(tools)
    .filter(([, path]) => path === undefined)
    .map(([name]) => `util-linux \`${name === 'pivotRoot' ? 'pivot_root' : name}\` (not found in /usr/bin, /bin, /usr/local/bin, /usr/sbin, /sbin)`);
  if (absent.length > 0) return new IsolationUnavailable(absent);
  const found = tools as { [K in keyof typeof tools]: string };
  lastAttemptExhausted = false;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const asRoot = isRoot ? attempt(found.unshare, []) : { error: 'this process is not root' };
  if ('features' in asRoot) return supported('root', found, asRoot.features);
  const asUser = attempt(found.unshare, ['--user', '--map-root-user']);
  if ('features' in asUser) return supported('user-namespace', found, asUser.features);
  const refusal = new IsolationUnavailable([
    `permission to create PID, mount and network namespaces (${asRoot.error})`,
    `unprivileged user namespaces (${asUser.error}; see sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns)`,
  ]);
  if (lastAttemptExhausted) transient.add(refusal);
  return refusal;
}
