/**
 * Why a vendor's backend cannot run on this machine, or undefined: only
 * Docker's needs the machine (dockerd as root, busybox for the image); the
 * emulators run anywhere. Where `CI` is set nothing is skipped, so a
 * missing dockerd fails there instead.
 */
import { dockerdMissing } from '@sandstream/adapter-docker/engine';

export function backendMissing(vendor: string): string | undefined {
  if (vendor !== 'docker' || process.env['CI'] !== undefined) return undefined;
  return dockerdMissing();
}
