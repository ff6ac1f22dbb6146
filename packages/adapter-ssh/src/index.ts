/**
 * `@sandstream/adapter-ssh`: Sandstream sandboxes on any machine reachable by
 * SSH, through exec channels and the shared remote driver (ADR-0033): argv
 * exact, output as bytes, the exact exit status, teardown of the whole tree,
 * and an owner lease that ends a foreground command when its owner or its
 * connection is lost, which sshd does not do.
 *
 * @packageDocumentation
 */
import type { CapabilityManifest, Sandbox } from '@sandstream/types';
import { checkRemoteOptions, defineRemoteSandbox } from '@sandstream/remote';
import { SshConnections } from './connections.js';
import { resolveSshOptions, type SshSandboxOptions } from './options.js';
import { SshTransport } from './transport.js';

/**
 * What the adapter does over SSH: output streamed as bytes, standard input
 * through the channel (its end-of-file for the end), limits by `prlimit` in
 * front of the command (util-linux on the server), background commands
 * whose records live on the server. No `user`: an SSH login is one account.
 * No `pty` yet.
 */
export const SSH_CAPABILITIES: CapabilityManifest = Object.freeze({
  streaming: true,
  stdin: true,
  'resource-limits': true,
  user: false,
  attach: true,
  'attach-reconnect': true,
  'replay-full': true,
});

/** What `Sandbox.native` holds: where the sandbox runs. */
export interface SshNative {
  readonly host: string;
  readonly port: number;
  readonly username: string;
}

/** The connections of each sandbox this module made, for `connectionsOf` in tests and the kit's hooks. */
const pools = new WeakMap<Sandbox, SshConnections>();

/**
 * Creates a Sandstream sandbox on a machine reachable by SSH. The host key
 * is verified before anything is sent (against `hostFingerprint`, else the
 * known_hosts file), authentication uses the key or the agent given, and one
 * connection is opened at once, so a wrong address, key or host key is an
 * error here, not at the first command. Commands run as argv under the
 * remote driver's supervisor in the account's environment; `close()` ends
 * what this handle started and the connections.
 *
 * @throws InvalidArgument for unknown or malformed options, before any connection.
 * @throws SshUnreachable when no SSH server answers at the address.
 * @throws HostKeyUnknown when the server's host key is in no known_hosts entry for it.
 * @throws HostKeyMismatch when it differs from the known or pinned one (nothing was sent).
 * @throws SshAuthFailed when the server refuses every key offered.
 *
 * @example
 * ```ts
 * import { createSshSandbox } from '@sandstream/adapter-ssh';
 * await using sb = await createSshSandbox({ host: 'build-1.internal', username: 'ci', privateKeyPath: '/run/secrets/ci_ed25519' });
 * const result = await sb.run(['uname', '-r']);
 * console.log(result.stdoutText);
 * ```
 */
export async function createSshSandbox(options: SshSandboxOptions): Promise<Sandbox<SshNative>> {
  const resolved = resolveSshOptions(options);
  checkRemoteOptions(options, SSH_CAPABILITIES);
  const connections = new SshConnections(resolved);
  await connections.check();
  const sandbox = defineRemoteSandbox<SshNative>({
    name: 'ssh',
    capabilities: SSH_CAPABILITIES,
    native: Object.freeze({ host: resolved.host, port: resolved.port, username: resolved.username }),
    options,
    transport: ({ requestTimeoutMs, shell }) => new SshTransport({ connections, requestTimeoutMs, shell }),
    // Every signal over SSH is a helper (sshd's own signals a whole group): one channel per account
    // takes the helpers' words on its standard input, instead of a channel and a shell each.
    helperChannel: true,
    release: async () => connections.close(),
  });
  pools.set(sandbox, connections);
  return sandbox;
}

/**
 * Ends every SSH connection of `sandbox` at once, as a network failure would, without ending
 * anything on the server: for fault tests of owner loss. Returns how many it cut.
 *
 * @example
 * ```ts
 * import { createSshSandbox, cutConnections } from '@sandstream/adapter-ssh';
 * const sb = await createSshSandbox({ host: '127.0.0.1', port: 2222, privateKeyPath: 'key', knownHostsPath: 'known_hosts' });
 * cutConnections(sb);
 * ```
 */
export function cutConnections(sandbox: Sandbox<SshNative>): number {
  return pools.get(sandbox)?.cut() ?? 0;
}

export { resolveSshOptions, type ResolvedSshOptions, type SshSandboxOptions } from './options.js';
export { HostKeyMismatch, HostKeyUnknown, SshAuthFailed, SshConnectionLost, SshUnreachable } from './errors.js';
export { SshTransport, type SshTransportSettings } from './transport.js';
export { channelStatus, SshConnections, type OpenChannel } from './connections.js';
export { INLINE_LIMIT, NO_DIRECTORY_MARK, PreludeFilter, quote, READY_MARK, startLine, type StartLine, type StartWords } from './start-line.js';
export { checkHostKey, fingerprintOf, hostVerifier, parseKnownHosts } from './host-keys.js';
export type { HostKeyVerdict, HostVerifier, HostVerifierOptions, KnownHostEntry, KnownHostPatterns, KnownHosts, MalformedKnownHostsLine } from './host-keys.js';
