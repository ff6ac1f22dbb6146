/**
 * Terminals on envd (spec 1.5, ADR-0052) against this package's emulator, beside the kit's
 * `pty.*` cases (conformance.test.ts): the transport's `Start` with `pty`, `pty` input and output,
 * `Update` to resize; and a background command's terminal, which util-linux's `script` holds in
 * the sandbox.
 */
import { rmSync } from 'node:fs';
import { expectBackgroundTerminal, expectNoScriptRefusal, expectTerminalBasics } from '@sandstream/test-support/terminal';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox, type E2BCommonOptions } from '../src/index.js';
import { emptyHome } from './helpers.js';

// The emulator's commands run on this host: an empty HOME keeps its login files out of them.
const HOME = emptyHome();
let envd: EnvdEmulator | undefined;
let native: E2BSdkSandbox | undefined;

afterAll(() => rmSync(HOME, { recursive: true, force: true }));

/** A handle on the emulator's sandbox, as conformance.test.ts makes them; `options` add to them. */
function handle(options: E2BCommonOptions = {}): ReturnType<typeof createE2BSandbox> {
  // The emulator runs commands as another account only when it runs as root (envd always does).
  const accounts = process.getuid?.() === 0 ? {} : { capabilities: { user: false } };
  return createE2BSandbox({ sandbox: native!, recordBase: envd!.recordBase, ...accounts, ...options });
}

describe('adapter-e2b on a terminal', () => {
  beforeAll(async () => {
    envd = await startEnvdEmulator({ env: { HOME } });
    native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
  });
  afterAll(async () => {
    await envd?.close();
  });

  it("runs a command on envd's terminal of the size asked, its bytes raw as stdout, its status exact, resize through Update", async () => {
    await using sb = await handle();
    await expectTerminalBasics(sb);
  }, 60_000);

  it("runs a background command on a terminal that util-linux's script holds in the sandbox: listed with its size, resized from its starter and from an attach, end-of-file at once, its status exact", async () => {
    await using sb = await handle();
    await using other = await handle();
    await expectBackgroundTerminal(sb, other);
  }, 60_000);

  it("refuses a background command on a terminal where the sandbox has no script, naming it, having made no record", async () => {
    await using sb = await handle({ scriptPath: '/nonexistent/script' });
    await expectNoScriptRefusal(sb, '/nonexistent/script');
  }, 60_000);

  it('gives a background command the umask a foreground one gets (the record is made under 077, the command is not)', async () => {
    await using sb = await handle();
    const foreground = (await sb.run(['sh', '-c', 'umask'])).stdoutText;
    await using background = sb.stream(['sh', '-c', 'umask'], { background: true });
    let text = '';
    for await (const chunk of background) text += Buffer.from(chunk.data).toString('latin1');
    expect(text).toBe(foreground);
    expect(foreground).not.toBe('0077\n');
  }, 60_000);
});
