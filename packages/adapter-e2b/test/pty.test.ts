/**
 * Terminals on envd (spec 1.5, ADR-0052) against this package's emulator: the transport's
 * `Start` with `pty`, `pty` input and output, `Update` to resize, and the kit's `pty.*` cases on
 * a handle whose manifest declares `pty`, a test-only configuration (the adapter's own manifest
 * does not declare it: `pty.background` needs a terminal a background command can keep, see the
 * README's Terminals).
 */
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeConformance } from '@sandstream/conformance/vitest';
import { severLinks } from '@sandstream/remote';
import { expectBackgroundTerminal, expectTerminalBasics } from '@sandstream/test-support/terminal';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { ptySandbox } from './fixtures/pty-sandbox.mjs';
import { emptyHome } from './helpers.js';

// The emulator's commands run on this host: an empty HOME keeps its login files out of them.
const HOME = emptyHome();
let envd: EnvdEmulator | undefined;
let native: E2BSdkSandbox | undefined;

afterAll(() => rmSync(HOME, { recursive: true, force: true }));

describe('adapter-e2b on a terminal', () => {
  beforeAll(async () => {
    envd = await startEnvdEmulator({ env: { HOME } });
    native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
  });
  afterAll(async () => {
    await envd?.close();
  });

  it("runs a command on envd's terminal of the size asked, its bytes raw as stdout, its status exact, resize through Update", async () => {
    await using sb = ptySandbox(native!, envd!.recordBase);
    await expectTerminalBasics(sb);
  }, 60_000);

  it("runs a background command on a terminal that util-linux's script holds in the sandbox: listed with its size, resized from its starter and from an attach, end-of-file at once, its status exact", async () => {
    await using sb = ptySandbox(native!, envd!.recordBase);
    await using other = ptySandbox(native!, envd!.recordBase);
    await expectBackgroundTerminal(sb, other);
  }, 60_000);

  it("refuses a background command on a terminal where the sandbox has no script, naming it, having made no record", async () => {
    await using sb = ptySandbox(native!, envd!.recordBase, { scriptPath: '/nonexistent/script' });
    const proc = sb.stream(['sh', '-c', 'echo ran'], { pty: { cols: 80, rows: 24 }, background: true });
    await expect(proc.wait()).rejects.toMatchObject({ code: 'SPAWN_FAILED', message: expect.stringContaining('"/nonexistent/script"') });
    expect((await sb.commands!()).map((info) => info.argv)).not.toContainEqual(['sh', '-c', 'echo ran']);
  }, 60_000);

  it('gives a background command the umask a foreground one gets (the record is made under 077, the command is not)', async () => {
    await using sb = ptySandbox(native!, envd!.recordBase);
    const foreground = (await sb.run(['sh', '-c', 'umask'])).stdoutText;
    await using background = sb.stream(['sh', '-c', 'umask'], { background: true });
    let text = '';
    for await (const chunk of background) text += Buffer.from(chunk.data).toString('latin1');
    expect(text).toBe(foreground);
    expect(foreground).not.toBe('0077\n');
  }, 60_000);
});

describe('the kit on envd terminals', () => {
  describeConformance({
    include: ['pty.*'],
    // Why it fails, and why the package's manifest does not declare pty: the README's Terminals.
    // pty.background: a background command's output goes to record files; envd's terminal sends
    // its bytes to the Start stream, which a background command must outlive.
    expectedFailures: [],
    factory: () => ptySandbox(native!, envd!.recordBase),
    hooks: {
      async setup() {
        envd = await startEnvdEmulator({ env: { HOME } });
        native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
      },
      async teardown() {
        await envd?.close();
      },
      attach: async (sandbox) => ptySandbox(sandbox.native as E2BSdkSandbox, envd!.recordBase),
      sever: (process) => severLinks(process),
      // pty.owner-crash: the owner process loads the fixture, on the same envd.
      owner: () => ({ env: { E2B_SANDBOX_URL: envd!.url, SANDSTREAM_RECORD_BASE: envd!.recordBase } }),
    },
    ownerModule: fileURLToPath(new URL('./fixtures/pty-sandbox.mjs', import.meta.url)),
  });
});
