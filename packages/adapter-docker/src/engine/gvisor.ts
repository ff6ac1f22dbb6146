/**
 * gVisor for the engine of your own: Debian's `runsc` registered on it as
 * an OCI runtime, so a test can create containers with
 * `HostConfig.Runtime: 'runsc'` (the adapter's `runtime` option).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { findExecutable } from './programs.js';

/** Why no gVisor runtime can be registered here, or undefined (dockerdMissing() says the rest). */
export function runscMissing(): string | undefined {
  if (findExecutable('runsc') === undefined) return 'runsc (gVisor) is not installed (Debian: apt-get install runsc)';
  return undefined;
}

/**
 * The daemon configuration (`startDockerd({ config })`) that registers
 * `runsc` as the runtime `runsc`, with what it needs on a host like a CI
 * runner's:
 *
 * - `--platform=ptrace`: gVisor intercepts system calls by ptrace, which any
 *   Linux host has; the faster KVM platform needs `/dev/kvm`, which a CI
 *   runner (itself a VM) rarely offers.
 * - `--network=none`: the sandbox gets a loopback only. gVisor's own network
 *   stack would take over the container's network namespace, and the tests'
 *   dockerd (`--bridge=none`) gives it none it accepts: runsc refuses to start
 *   with "cannot run with network enabled in root network namespace". The
 *   adapter's containers have no network by default anyway.
 *
 * No `--ignore-cgroups`: runsc 0.0~20221219 runs under cgroup v1 and overlay2
 * as they are.
 *
 * @example
 * ```ts
 * const engine = await startDockerd({ config: gvisorConfig() });
 * ```
 */
export function gvisorConfig(runsc = findExecutable('runsc') ?? '/usr/bin/runsc'): Record<string, unknown> {
  return {
    runtimes: {
      runsc: {
        path: runsc,
        runtimeArgs: ['--platform=ptrace', '--network=none'],
      },
    },
  };
}

/**
 * The state directory (`runsc --root`) of the gVisor containers of a
 * daemon with exec root `execRoot` (the engine's `<dir>/exec`): containerd's
 * runc shim runs runsc with runc's root for the `moby` namespace. With it,
 * `runsc --root <it> exec <id> ...` reaches inside a container without the
 * daemon, as a test that stops dockerd needs.
 */
export function runscRoot(execRoot: string): string | undefined {
  const root = join(execRoot, 'runtime-runc', 'moby');
  return existsSync(root) ? root : undefined;
}
