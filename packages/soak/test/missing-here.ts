import { dockerdMissing, runscMissing } from '@sandstream/adapter-docker/engine';
import { sshdMissing } from '@sandstream/adapter-ssh/server';

/**
 * Why an adapter's soak cannot run on this machine: the Docker target starts a dockerd of its
 * own, which needs the daemon installed and root; the SSH target an sshd of its own, which needs
 * OpenSSH's server, Linux and root. On CI, never: there it must run.
 */
export function missingHere(adapter: string): string | undefined {
  if (process.env['CI'] !== undefined) return undefined;
  if (adapter === 'docker') return dockerdMissing();
  if (adapter === 'ssh') return sshdMissing();
  return undefined;
}

/** Why the Docker soak under gVisor cannot run here (dockerd, root, runsc); on CI, never. */
export function gvisorMissingHere(): string | undefined {
  if (process.env['CI'] !== undefined) return undefined;
  return dockerdMissing() ?? runscMissing();
}
