/**
 * Shared test helpers: one emulator per test file, adapter sandboxes on it,
 * and a check after each test that no process of the emulated sandboxes is
 * left alive.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { waitFor } from '@sandstream/test-support/timing';
import type { Sandbox } from '@sandstream/types';
import type { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { createVercelSandbox, type VercelCommonOptions } from '../src/index.js';
import { VercelEmulator, type EmulatorOptions } from '../src/emulator/index.js';

/** A short grace period, so SIGKILL paths stay quick. */
export const GRACE_MS = 300;
/** Node, for child scripts that need more than a shell. */
export const NODE = process.execPath;

let current: VercelEmulator | undefined;
const open = new Set<Sandbox<VercelSdkSandbox>>();

/**
 * Starts this file's emulator before its tests and closes it after them;
 * with seed 002's stdin endpoint unless `options` say `stdin: false`.
 */
export function useEmulator(options: EmulatorOptions = {}): () => VercelEmulator {
  beforeAll(async () => {
    current = await VercelEmulator.start({ stdin: true, ...options });
  });
  afterEach(async () => {
    for (const sandbox of open) await sandbox.close().catch(() => undefined);
    open.clear();
    // Nothing of any command may outlive its test (a process killed a moment
    // ago may still be on its way out: give the kernel a bounded moment).
    const left = (): string[] => current!.processes().map((p) => `${p.pid} ${p.cmdline}`);
    await waitFor(() => left().length === 0, 5_000, () => `processes of the emulated sandboxes outlived the test: ${JSON.stringify(left())}`);
  });
  afterAll(async () => {
    await current?.close();
    current = undefined;
  });
  return () => current!;
}

/** An adapter sandbox on the file's emulator, closed after the test. */
export async function testSandbox(options: VercelCommonOptions = {}): Promise<Sandbox<VercelSdkSandbox>> {
  const emulator = current!;
  const sandbox = await createVercelSandbox({ ...emulator.credentials, fetch: emulator.fetch, recordBase: emulator.recordBase, graceMs: GRACE_MS, ...options });
  open.add(sandbox);
  return sandbox;
}

export { within } from '@sandstream/test-support/timing';

/** Waits until `condition()` holds, polling; fails after `ms`. */
export { waitFor as until } from '@sandstream/test-support/timing';
