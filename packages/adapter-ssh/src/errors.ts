/**
 * The SSH adapter's typed errors. Each is a `TransportError` (code
 * `TRANSPORT`, so code that matches on the contract's codes keeps working)
 * whose message says what happened and what to do.
 */
import { TransportError, type TransportErrorOptions } from '@sandstream/types';

/** How OpenSSH names a host in known_hosts: `host` on port 22, `[host]:port` on any other. */
function hostName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/**
 * The server's host key is in no known_hosts entry for this host, and no
 * `hostFingerprint` was pinned: the adapter cannot tell the server from an
 * impostor, so it refused the handshake before authenticating (nothing was
 * sent: no password, no signature, no command).
 *
 * @example
 * ```ts
 * import { HostKeyUnknown } from '@sandstream/adapter-ssh';
 * function explain(error: unknown): string | undefined {
 *   if (error instanceof HostKeyUnknown) return `${error.host}:${error.port} offered ${error.fingerprint}`;
 *   return undefined;
 * }
 * ```
 */
export class HostKeyUnknown extends TransportError {
  constructor(
    readonly host: string,
    readonly port: number,
    /** The key the server presented, as OpenSSH prints it: `SHA256:` and unpadded base64. */
    readonly fingerprint: string,
    /** Where the adapter looked: a known_hosts path, or `the knownHosts option`. */
    readonly where: string,
  ) {
    const file = /[\\/]/.test(where) ? where : '~/.ssh/known_hosts';
    super(
      `the SSH server at ${hostName(host, port)} presented the host key ${fingerprint}, which no entry of ${where} lists for it: nothing was sent to it. ` +
        `Verify that fingerprint out of band (on the host: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub, or ask its administrator), ` +
        `then add the key to known_hosts (ssh-keyscan -p ${port} ${host} >> ${file}, after checking that what it prints has that fingerprint) ` +
        `or pass hostFingerprint: '${fingerprint}'`,
    );
  }
}

/**
 * The server presented a host key other than the one expected: known_hosts
 * lists the host with another key of that type, the pinned `hostFingerprint`
 * differs, or known_hosts marks the key `@revoked`. Someone may be
 * intercepting the connection (a man-in-the-middle), or the host's key was
 * replaced; the handshake was refused before authenticating, so nothing was
 * sent.
 *
 * @example
 * ```ts
 * import { HostKeyMismatch } from '@sandstream/adapter-ssh';
 * function isRevoked(error: unknown): boolean {
 *   return error instanceof HostKeyMismatch && error.expected === '@revoked';
 * }
 * ```
 */
export class HostKeyMismatch extends TransportError {
  constructor(
    readonly host: string,
    readonly port: number,
    /** The key the server presented, as OpenSSH prints it: `SHA256:` and unpadded base64. */
    readonly fingerprint: string,
    /** The fingerprints expected (comma-separated), or `@revoked` when known_hosts revokes the presented key. */
    readonly expected: string,
  ) {
    const name = hostName(host, port);
    const start = `the SSH server at ${name} presented the host key ${fingerprint}`;
    const risk = 'someone may be intercepting the connection (a man-in-the-middle attack)';
    super(
      expected === '@revoked'
        ? `${start}, which known_hosts marks @revoked: it must never be accepted, and ${risk}; nothing was sent to it. ` +
            `Ask the host's administrator to replace the key, then verify the new one's fingerprint out of band and add it`
        : `${start}, not the one expected for it (${expected}): ${risk}, or the host's key was replaced; nothing was sent to it. ` +
            `Ask the host's administrator for its key's fingerprint; only if the key did change, remove the old entry (ssh-keygen -R '${name}') ` +
            `and add the verified new one, or update hostFingerprint`,
    );
  }
}

/**
 * No SSH server answered at the address: the connection was refused, timed
 * out, or the name did not resolve. Nothing ran.
 *
 * @example
 * ```ts
 * import { SshUnreachable } from '@sandstream/adapter-ssh';
 * const error = new SshUnreachable('build.example.com:22', 'connect ECONNREFUSED');
 * console.log(error.code); // "TRANSPORT"
 * ```
 */
export class SshUnreachable extends TransportError {
  constructor(
    /** `host:port` the adapter dialled. */
    readonly address: string,
    /** Why: `connect ECONNREFUSED`, `timed out after 15000 ms`, `getaddrinfo ENOTFOUND`... */
    readonly reason: string,
    options?: TransportErrorOptions,
  ) {
    super(
      `no SSH server answered at ${address} (${reason}): check the host name and port, that sshd runs there, and that no firewall drops the connection`,
      options,
    );
  }
}

/**
 * The server refused every authentication method the adapter offered. Nothing
 * ran.
 *
 * @example
 * ```ts
 * import { SshAuthFailed } from '@sandstream/adapter-ssh';
 * const error = new SshAuthFailed('build.example.com:22', 'ci', 'publickey');
 * console.log(error.username); // "ci"
 * ```
 */
export class SshAuthFailed extends TransportError {
  constructor(
    /** `host:port` the adapter connected to. */
    readonly address: string,
    readonly username: string,
    /** The methods offered, comma-separated: `publickey,password`... */
    readonly methods: string,
    options?: TransportErrorOptions,
  ) {
    super(
      `the SSH server at ${address} refused every authentication method offered for the user ${JSON.stringify(username)} (${methods}): ` +
        `check the username, and pass a private key (or an agent holding one) that the user's ~/.ssh/authorized_keys on the host lists, or a password if the server accepts one`,
      options,
    );
  }
}

/**
 * The SSH connection dropped (the network, sshd restarting, the host going
 * down). A command that ran in the background may still run: `commandId`
 * names it when known.
 *
 * @example
 * ```ts
 * import { SshConnectionLost } from '@sandstream/adapter-ssh';
 * const error = new SshConnectionLost('build.example.com:22', { commandId: 'c1' });
 * console.log(error.commandId); // "c1"
 * ```
 */
export class SshConnectionLost extends TransportError {
  constructor(
    /** `host:port` the connection went to. */
    readonly address: string,
    options?: TransportErrorOptions,
  ) {
    super(
      `the SSH connection to ${address} dropped: what ran in the foreground lost its link and its exit status is unknown; ` +
        `connect again, and attach to a background command by its id (it may still run) or run the command again`,
      options,
    );
  }
}
