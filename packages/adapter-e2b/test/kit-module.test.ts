/**
 * The module's face for the kit's CLI: without E2B settings, setup() starts
 * the emulator, the default export hands out sandboxes that do not own it,
 * attach() gives a second handle that survives the first's close(), and
 * teardown() stops everything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxClosed } from '@sandstream/types';
import createSandbox, { conformanceHooks } from '../src/conformance.js';

const saved: Record<string, string | undefined> = {};
beforeAll(() => {
  for (const name of ['E2B_API_KEY', 'E2B_SANDBOX_URL']) {
    saved[name] = process.env[name];
    delete process.env[name];
  }
});
afterAll(async () => {
  await conformanceHooks.teardown();
  for (const [name, value] of Object.entries(saved)) if (value !== undefined) process.env[name] = value;
});

describe('the adapter module for the conformance CLI', () => {
  it('refuses to hand out a sandbox before setup()', async () => {
    await expect(createSandbox()).rejects.toThrow(/setup\(\) has not run/);
  });

  it('runs on the emulator between setup() and teardown(); attach() outlives close()', async () => {
    await conformanceHooks.setup();
    const sb = await createSandbox();
    expect(sb.name).toBe('e2b');
    expect((await sb.run(['echo', 'hello'])).stdoutText).toBe('hello\n');
    const observer = await conformanceHooks.attach(sb);
    await sb.close();
    await expect(sb.run(['true'])).rejects.toBeInstanceOf(SandboxClosed);
    // The environment is shared, not owned: the observer still runs commands.
    expect((await observer.run(['echo', 'still'])).stdoutText).toBe('still\n');
    await observer.close();
    await conformanceHooks.teardown();
    await expect(createSandbox()).rejects.toThrow(/setup\(\) has not run/);
  });
});
