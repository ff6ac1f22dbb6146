/**
 * The adapter module's face for the conformance kit: a default-export
 * factory and `conformanceHooks`, configured from the environment:
 *
 * - `SANDSTREAM_SSH_HOST` (required) and `SANDSTREAM_SSH_PORT` (default 22);
 * - `SANDSTREAM_SSH_USER` (default: this process's user name);
 * - `SANDSTREAM_SSH_KEY`: a private key file (else the agent, `SSH_AUTH_SOCK`);
 * - `SANDSTREAM_SSH_KNOWN_HOSTS`: the known_hosts file (default `~/.ssh/known_hosts`),
 *   or `SANDSTREAM_SSH_FINGERPRINT`: the pinned host key fingerprint.
 *
 * Every factory call is a handle of its own on the same account, so the
 * kit's observer (`attach`) sees what a closed handle left, and an owner
 * process (spec 1.4's `owner.crash`) reaches the same server.
 */
import { severLinks } from '@sandstream/remote';
import type { ConformanceHooks } from '@sandstream/conformance';
import { InvalidArgument, type Process, type Sandbox } from '@sandstream/types';
import { createSshSandbox, type SshNative } from './index.js';
import type { SshSandboxOptions } from './options.js';

/**
 * The kit's hooks (`ConformanceHooks` of `@sandstream/conformance`), every one of which this module
 * exports. A type-only import: the module needs the kit at no time but when the kit loads it.
 */
export type SshConformanceHooks = Required<ConformanceHooks>;

/** The variables this module reads, passed on to an owner process. */
const VARIABLES = ['SANDSTREAM_SSH_HOST', 'SANDSTREAM_SSH_PORT', 'SANDSTREAM_SSH_USER', 'SANDSTREAM_SSH_KEY', 'SANDSTREAM_SSH_KNOWN_HOSTS', 'SANDSTREAM_SSH_FINGERPRINT'] as const;

const read = (name: (typeof VARIABLES)[number]): string | undefined => process.env[name] || undefined;

/** The options from the environment (see the module comment). */
export function optionsFromEnvironment(): SshSandboxOptions {
  const host = read('SANDSTREAM_SSH_HOST');
  if (host === undefined) throw new InvalidArgument('SANDSTREAM_SSH_HOST', 'is not set: name the SSH server the kit runs against (and SANDSTREAM_SSH_PORT, SANDSTREAM_SSH_USER, SANDSTREAM_SSH_KEY, SANDSTREAM_SSH_KNOWN_HOSTS)');
  const port = read('SANDSTREAM_SSH_PORT');
  const username = read('SANDSTREAM_SSH_USER');
  const key = read('SANDSTREAM_SSH_KEY');
  const knownHosts = read('SANDSTREAM_SSH_KNOWN_HOSTS');
  const fingerprint = read('SANDSTREAM_SSH_FINGERPRINT');
  return {
    host,
    ...(port === undefined ? {} : { port: Number(port) }),
    ...(username === undefined ? {} : { username }),
    ...(key === undefined ? {} : { privateKeyPath: key }),
    ...(knownHosts === undefined ? {} : { knownHostsPath: knownHosts }),
    ...(fingerprint === undefined ? {} : { hostFingerprint: fingerprint }),
  };
}

/** Lifecycle and observation hooks of this adapter module for the conformance kit. */
export const conformanceHooks: SshConformanceHooks = {
  async setup() {
    // Checked once, before the first case: a wrong address or key is one error, not eighty.
    optionsFromEnvironment();
  },
  async teardown() {
    // The server is the caller's.
  },
  async attach() {
    return createSshSandbox(optionsFromEnvironment());
  },
  sever(process: Process) {
    return severLinks(process);
  },
  owner() {
    const env: Record<string, string> = {};
    for (const name of VARIABLES) {
      const value = read(name);
      if (value !== undefined) env[name] = value;
    }
    return { env };
  },
};

/** The conformance kit's entry point: a handle on the configured server per call. */
export default async function createSandbox(): Promise<Sandbox<SshNative>> {
  return createSshSandbox(optionsFromEnvironment());
}
