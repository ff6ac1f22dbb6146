/**
 * The whole conformance kit against the adapter on the envd emulator, with
 * nothing disabled: the module's own hooks start the emulator (no E2B
 * credentials are read here, whatever the environment holds).
 */
import { describeConformance } from '@sandstream/conformance/vitest';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { createE2BSandbox } from '../src/index.js';

let envd: EnvdEmulator | undefined;
let native: E2BSdkSandbox | undefined;

describeConformance({
  factory: () => createE2BSandbox({ sandbox: native!, graceMs: 500 }),
  hooks: {
    async setup() {
      envd = await startEnvdEmulator();
      native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
    },
    async teardown() {
      await envd?.close();
    },
    attach: (sandbox) => createE2BSandbox({ sandbox: sandbox.native as E2BSdkSandbox }),
  },
});
