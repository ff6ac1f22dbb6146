// What the tool descriptions say about the sandbox the server runs: the
// model reads them before its first call, and a command that assumes a
// network, a writable home or a shell that remembers its `cd` fails in ways
// it cannot diagnose. Facts, taken from the sandbox itself where it says them.
import type { Sandbox } from '@sandstream/types';

/** What the descriptions state about a sandbox. */
export interface SandboxFacts {
  /** A few words for the tools' titles, e.g. `isolated: Linux namespaces`. */
  readonly short: string;
  /** Sentences for the descriptions: isolation, network, writable paths. */
  readonly text: string;
}

/** The part of adapter-local's `native` read here (an interface of that adapter, read structurally). */
interface LocalNativeView {
  readonly kind?: unknown;
  readonly isolation?: unknown;
  readonly sandbox?: { readonly workDir?: unknown; readonly network?: unknown; readonly mounts?: unknown } | undefined;
}

interface MountView {
  readonly source?: unknown;
  readonly target?: unknown;
  readonly readonly?: unknown;
}

function localFacts(native: LocalNativeView): SandboxFacts {
  if (native.isolation === 'namespaces') {
    const workDir = typeof native.sandbox?.workDir === 'string' ? native.sandbox.workDir : '/workspace';
    const mounts = Array.isArray(native.sandbox?.mounts) ? (native.sandbox.mounts as MountView[]) : [];
    const writable = [workDir, '/tmp', ...mounts.filter((mount) => mount.readonly === false).map((mount) => String(mount.target ?? mount.source))];
    const network = native.sandbox?.network === true ? "the host's network" : 'no network: loopback (127.0.0.1) only, nothing outside the sandbox can be reached';
    return {
      short: 'isolated: Linux namespaces',
      text:
        `Sandbox: an isolated environment of Linux namespaces on the host (adapter local, isolation namespaces). ` +
        `Writable: ${writable.join(', ')} (the default directory and HOME is ${workDir}); the host's system directories are read-only and its home directories absent. ` +
        `Network: ${network}. Its own process table; everything started ends with the session.`,
    };
  }
  return {
    short: 'local, not isolated',
    text:
      "Sandbox: NONE. Commands run directly on the host as the server's user (adapter local, no isolation): " +
      "whatever that user can read or write on the host's filesystem, a command can, and it has the host's network. " +
      'Everything started ends with the session.',
  };
}

/**
 * The facts of `sandbox` for the tool descriptions. adapter-local says its
 * isolation and network in `native`; a remote adapter's sandbox is its own
 * machine or container, configured by whoever started the server, so only
 * what `hints` give is stated of it. `override` replaces the sentences.
 */
export function sandboxFacts(sandbox: Sandbox, hints: { readonly network?: string | undefined; readonly override?: string | undefined } = {}): SandboxFacts {
  const native = sandbox.native as LocalNativeView | null | undefined;
  const facts =
    typeof native === 'object' && native !== null && native.kind === 'local'
      ? localFacts(native)
      : {
          short: `${sandbox.name} sandbox`,
          text:
            `Sandbox: a separate ${sandbox.name} environment (adapter ${sandbox.name}) with its own filesystem, processes and network; nothing of the server's machine is visible. ` +
            (hints.network === undefined ? 'Writable paths and network access are as that environment was configured.' : `Network: ${hints.network}.`),
        };
  return hints.override === undefined ? facts : { short: facts.short, text: hints.override };
}
