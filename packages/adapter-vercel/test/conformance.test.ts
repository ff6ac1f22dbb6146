/**
 * The full conformance kit against the adapter on the local emulator, with
 * nothing disabled: cases are skipped only where the manifest rules them
 * out (resource limits, another user, byte-exact output), with the reason.
 */
import { afterAll, beforeAll } from 'vitest';
import { CASES } from '@sandstream/conformance';
import { describeConformance } from '@sandstream/conformance/vitest';
import { createVercelSandbox } from '../src/index.js';
import { VercelEmulator } from '../src/emulator/index.js';

const GRACE_MS = 500;
let emulator: VercelEmulator | undefined;

/**
 * Cases that compare arbitrary bytes (invalid UTF-8 included), which a
 * text-only backend cannot pass. Spec 1.1 gates them on `binary-output`;
 * while a kit build does not gate one of them yet, it is listed as an
 * expected failure, so it still runs and its failure is still checked.
 */
const BYTE_EXACT = ['bytes.all-values', 'stdin.large-input', 'stdin.run-input'];
const ungated = BYTE_EXACT.filter((id) => {
  const found = CASES.find((c) => c.id === id);
  return found !== undefined && !(found.needs ?? []).includes('binary-output' as never);
});
if (ungated.length > 0) {
  console.warn(`byte-exact cases not yet gated on "binary-output" by this kit build, expected to fail: ${ungated.join(', ')}`);
}

beforeAll(async () => {
  emulator = await VercelEmulator.start();
});

afterAll(async () => {
  await emulator?.close();
});

describeConformance({
  factory: () => createVercelSandbox({ ...emulator!.credentials, fetch: emulator!.fetch, graceMs: GRACE_MS }),
  graceMs: GRACE_MS,
  expectedFailures: ungated,
});
