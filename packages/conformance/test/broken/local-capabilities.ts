import { createLocalSandbox } from '@sandstream/adapter-local';
import type { CapabilityManifest } from '@sandstream/types';

/** What the local adapter can do on this machine (the broken adapters are built on it). */
export async function localCapabilities(): Promise<Readonly<CapabilityManifest>> {
  const probe = createLocalSandbox();
  const capabilities = { ...probe.capabilities };
  await probe.close();
  return capabilities;
}
