/**
 * The whole conformance kit against the adapter on the envd emulator,
 * nothing disabled. The emulator is started here, so no E2B credentials are
 * read whatever the environment holds (test/conformance-e2b.test.ts runs
 * the module's own hooks against real E2B).
 */
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeConformance } from '@sandstream/conformance/vitest';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { afterAll } from 'vitest';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';
import { conformanceHooks } from '../src/conformance.js';
import { emptyHome } from './helpers.js';

/** The emulator runs commands as another account only when it runs as root (envd always does). */
const ACCOUNTS = process.getuid?.() === 0 ? {} : { capabilities: { user: false } };

// The emulator's commands run on this host: an empty HOME keeps its login files out of them (the
// pty cases start interactive shells, which read them).
const HOME = emptyHome();
afterAll(() => rmSync(HOME, { recursive: true, force: true }));

let envd: EnvdEmulator | undefined;
let native: E2BSdkSandbox | undefined;

describeConformance({
  factory: () => createE2BSandbox({ sandbox: native!, recordBase: envd!.recordBase, ...ACCOUNTS }),
  hooks: {
    async setup() {
      envd = await startEnvdEmulator({ env: { HOME } });
      native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
    },
    async teardown() {
      await envd?.close();
    },
    attach: (sandbox) => createE2BSandbox({ sandbox: sandbox.native as E2BSdkSandbox, recordBase: envd!.recordBase, ...ACCOUNTS }),
    sever: (process) => conformanceHooks.sever(process),
    // Spec 1.4, owner.crash: the built module in a second OS process, on the same envd.
    owner: () => ({ env: { E2B_SANDBOX_URL: envd!.url } }),
  },
  ownerModule: fileURLToPath(new URL('../dist/conformance.js', import.meta.url)),
});
