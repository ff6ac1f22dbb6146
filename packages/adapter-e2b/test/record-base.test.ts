/**
 * Where background commands' records live: a base of each emulated environment's own, so two
 * environments on one host (two test runs side by side) never list each other's commands, as two
 * real sandboxes would not; and a bad `recordBase` is refused before anything is made.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgument } from '@sandstream/types';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';

const API_KEY = 'e2b_test_key';
const ACCOUNTS = process.getuid?.() === 0 ? {} : { capabilities: { user: false } };
let first: EnvdEmulator;
let second: EnvdEmulator;

beforeAll(async () => {
  [first, second] = await Promise.all([startEnvdEmulator(), startEnvdEmulator()]);
});

afterAll(async () => {
  await Promise.all([first?.close(), second?.close()]);
});

async function handleOn(envd: EnvdEmulator) {
  const native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
  return createE2BSandbox({ sandbox: native, recordBase: envd.recordBase, ...ACCOUNTS });
}

describe('record bases', () => {
  it("each emulator has a directory of its own, open to every account as /tmp is", () => {
    expect(first.recordBase).not.toBe(second.recordBase);
    for (const envd of [first, second]) {
      expect(envd.recordBase.endsWith('/.sandstream-')).toBe(true);
      expect(statSync(dirname(envd.recordBase)).mode & 0o7777).toBe(0o1777);
    }
  });

  it("a handle lists the background commands of its environment and none of another's", async () => {
    await using a = await handleOn(first);
    await using b = await handleOn(second);
    await using other = await handleOn(first);
    await using proc = a.stream(['sleep', '600'], { background: true });
    await proc.started();
    const id = proc.commandId!;
    expect(readdirSync(dirname(first.recordBase))).toContain(`.sandstream-${id}`);
    // The system answered (its own command is there) before the absence on the other is believed.
    expect((await other.commands!()).map((c) => c.commandId)).toContain(id);
    expect(await b.commands!()).toEqual([]);
  }, 60_000);

  it('a bad recordBase is refused with InvalidArgument before a sandbox is made', async () => {
    // An emulator with the control plane, which lists every sandbox created through it.
    await using envd = await startEnvdEmulator({ controlPlane: { apiKey: API_KEY } });
    const connection = { apiKey: API_KEY, apiUrl: envd.url, sandboxUrl: envd.url };
    for (const recordBase of ['relative/.sandstream-', '/tmp/dir/', '/tmp/a\nb-', '/tmp/\0-', 7]) {
      const made = createE2BSandbox({ connection, recordBase } as never);
      await expect(made).rejects.toBeInstanceOf(InvalidArgument);
      await expect(made).rejects.toMatchObject({ key: 'options.recordBase' });
    }
    expect(envd.sandboxes()).toEqual([]);
    // The same call with a good base does make one: the emptiness above is the refusal's.
    await using made = await createE2BSandbox({ connection, recordBase: envd.recordBase, ...ACCOUNTS });
    expect(envd.sandboxes().map((sandbox) => sandbox.sandboxId)).toEqual([made.native.sandboxId]);
  });

  it("the emulator's close removes its records' directory", async () => {
    const envd = await startEnvdEmulator();
    const dir = dirname(envd.recordBase);
    {
      await using sb = await handleOn(envd);
      const proc = sb.stream(['sleep', '600'], { background: true });
      await proc.started();
      await proc.detach();
      expect(readdirSync(dir)).toContain(`.sandstream-${proc.commandId!}`);
    }
    await envd.close();
    expect(existsSync(dir)).toBe(false);
  }, 60_000);
});
