/**
 * The full conformance kit against the adapter on the local emulator, with
 * nothing disabled and no expected failure: cases are skipped only where the
 * manifest rules them out (resource limits, another user, byte-exact output),
 * with the reason; the text-only wire is checked by the kit's SS-TEXT-1 case.
 */
import type { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { describeConformance } from '@sandstream/conformance/vitest';
import { createVercelSandbox } from '../src/index.js';
import { conformanceHooks } from '../src/conformance.js';
import { VercelEmulator } from '../src/emulator/index.js';

// The time a command's SIGTERM trap has to run: on the emulator, beside a second suite, a shell
// that had to run `echo bye` in its trap was SIGKILLed first at 500 ms (output-cap.on-output-throws).
const GRACE_MS = 1_000;
let emulator: VercelEmulator | undefined;

beforeAll(async () => {
  // With seed 002's stdin endpoint, so that the kit's stdin cases run.
  emulator = await VercelEmulator.start({ stdin: true });
});

afterAll(async () => {
  await emulator?.close();
});

describeConformance({
  factory: () => createVercelSandbox({ ...emulator!.credentials, fetch: emulator!.fetch, recordBase: emulator!.recordBase, graceMs: GRACE_MS }),
  graceMs: GRACE_MS,
  hooks: {
    // A second handle on the same sandbox, to observe it after close() (teardown.close).
    attach: (sandbox) => createVercelSandbox({ sandbox: sandbox.native as VercelSdkSandbox, recordBase: emulator!.recordBase }),
    sever: conformanceHooks.sever,
    // Spec 1.4, owner.crash: the built module in a second OS process, on the same sandbox of the emulator.
    owner: (sandbox) => ({
      env: {
        SANDSTREAM_VERCEL_JOIN: JSON.stringify({
          name: (sandbox.native as VercelSdkSandbox).name,
          emulator: { url: emulator!.url, credentials: emulator!.credentials, recordBase: emulator!.recordBase },
        }),
      },
    }),
  },
  ownerModule: fileURLToPath(new URL('../dist/conformance.js', import.meta.url)),
});
