/**
 * The full conformance kit against the adapter on the local emulator, with
 * nothing disabled: cases are skipped only where the manifest rules them
 * out (resource limits, another user, byte-exact output), with the reason.
 */
import { afterAll, beforeAll } from 'vitest';
import { CASES, runConformance } from '@sandstream/conformance';
import { describeConformance } from '@sandstream/conformance/vitest';
import { conformanceHooks, createVercelSandbox } from '../src/index.js';
import { VercelEmulator } from '../src/emulator/index.js';

const GRACE_MS = 500;
let emulator: VercelEmulator | undefined;

/**
 * Cases that compare arbitrary bytes (invalid UTF-8 included) through a
 * command's output, which a text-only backend cannot pass. Spec 1.1 gates
 * them on `binary-output`. A kit build that does not gate one of them yet
 * has it run here first: when it fails on a byte mismatch (the text-only
 * signature, nothing else), it is listed as an expected failure, so it still
 * runs in the suite and a different failure still fails the suite.
 */
const BYTE_EXACT = ['bytes.all-values', 'stdin.large-input', 'stdin.run-input'];
async function textOnlyFailures(): Promise<string[]> {
  const candidates = BYTE_EXACT.filter((id) => {
    const found = CASES.find((c) => c.id === id);
    return found !== undefined && !(found.needs ?? []).includes('binary-output' as never);
  });
  if (candidates.length === 0) return [];
  const local = await VercelEmulator.start();
  try {
    const report = await runConformance({
      factory: () => createVercelSandbox({ ...local.credentials, fetch: local.fetch, graceMs: GRACE_MS }),
      include: candidates,
    });
    return report.cases
      .filter((r) => candidates.includes(r.id) && r.status === 'fail' && /bytes differ/.test(r.message ?? ''))
      .map((r) => r.id);
  } finally {
    await local.close();
  }
}
const ungated = await textOnlyFailures();
if (ungated.length > 0) {
  console.warn(`byte-exact cases not yet gated on "binary-output" by this kit build, failing on bytes as expected: ${ungated.join(', ')}`);
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
  // A second handle on the same sandbox, to observe it after close() (teardown.close).
  hooks: { attach: conformanceHooks.attach },
});
