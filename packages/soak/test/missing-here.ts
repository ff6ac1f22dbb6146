import { dockerdMissing, runscMissing } from '@sandstream/adapter-docker/engine';

/**
 * Why an adapter's soak cannot run on this machine: the Docker target starts a dockerd of its
 * own, which needs the daemon installed and root. On CI, never: there it must run.
 */
export function missingHere(adapter: string): string | undefined {
  if (adapter !== 'docker' || process.env['CI'] !== undefined) return undefined;
  return dockerdMissing();
}

/** Why the Docker soak under gVisor cannot run here (dockerd, root, runsc); on CI, never. */
export function gvisorMissingHere(): string | undefined {
  if (process.env['CI'] !== undefined) return undefined;
  return dockerdMissing() ?? runscMissing();
}
