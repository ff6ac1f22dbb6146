import type { Sandbox } from '@sandstream/types';
import { createLocalSandbox } from './index.js';
import { attachIsolatedSandbox } from './isolation/sandbox.js';

/**
 * The conformance kit's entry point for the isolated mode
 * (`@sandstream/adapter-local/isolated`): a fresh sandbox in its own
 * namespaces per call.
 */
export default async function createSandbox(): Promise<Sandbox> {
  return createLocalSandbox({ isolation: 'namespaces' });
}

/**
 * The kit's hooks for the isolated mode. Each sandbox is its own
 * environment (a PID namespace), so the kit observes one after `close()`
 * through a second handle on the same environment: `attach`. Its commands
 * fail once the owner's `close()` has ended the environment.
 */
export const conformanceHooks = {
  async attach(sandbox: Sandbox): Promise<Sandbox> {
    return attachIsolatedSandbox(sandbox);
  },
};
