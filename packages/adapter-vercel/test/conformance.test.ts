/**
 * The full conformance kit against the adapter on the local emulator, with
 * nothing disabled: cases are skipped only where the manifest rules them
 * out (resource limits, another user, byte-exact output), with the reason.
 */
import { afterAll, beforeAll } from 'vitest';
import { CASES } from '@sandstream/conformance';
import { describeConformance } from '@sandstream/conformance/vitest';
import { defineSandbox } from '@sandstream/types/runtime';
import { conformanceHooks, createVercelSandbox } from '../src/index.js';
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

/**
 * SS-WAIT-3 (a reading loop keeps its output while another task awaits
 * wait()) is the shared runtime's to provide, not a driver's: the local
 * adapter fails `wait.reader-keeps-output` the same way while the runtime
 * lacks it. This asks the runtime directly, with a driver that writes one
 * chunk after wait() was called and the loop began; while the runtime drops
 * it, the case is an expected failure here too, and once the runtime keeps
 * it the case must pass.
 */
async function runtimeKeepsReaderOutput(): Promise<boolean> {
  const sandbox = defineSandbox({
    name: 'wait-probe',
    capabilities: { streaming: true, stdin: false, 'resource-limits': false, user: false },
    native: undefined,
    createDriver: () => ({
      async start(events) {
        setTimeout(() => {
          events.output('stdout', new TextEncoder().encode('kept'));
          events.exit({ exitCode: 0, signal: null });
        }, 20);
        return {};
      },
      async writeStdin() {},
      async closeStdin() {},
      async signal() {},
    }),
  });
  const proc = sandbox.stream(['probe']);
  const waiting = proc.wait();
  const first = await proc[Symbol.asyncIterator]().next();
  await waiting.catch(() => undefined);
  await sandbox.close();
  return first.done !== true;
}
const runtimeOwned = (await runtimeKeepsReaderOutput()) ? [] : ['wait.reader-keeps-output'];
if (runtimeOwned.length > 0) {
  console.warn(`the shared runtime does not yet keep a reading loop's output while wait() is pending; expected to fail: ${runtimeOwned.join(', ')}`);
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
  expectedFailures: [...ungated, ...runtimeOwned],
  // A second handle on the same sandbox, to observe it after close() (teardown.close).
  hooks: { attach: conformanceHooks.attach },
});
