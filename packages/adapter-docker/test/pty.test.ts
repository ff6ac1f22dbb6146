/**
 * Terminals on Docker (spec 1.5, ADR-0052) against a real dockerd of this file's own, beside the
 * kit's `pty.*` cases (conformance.test.ts): the transport's exec with `Tty` and `ConsoleSize`,
 * and a background command's terminal, which util-linux's `script` holds in the container.
 */
import { unless } from '@sandstream/test-support/skips';
import { expectBackgroundTerminal, expectNoScriptRefusal, expectTerminalBasics } from '@sandstream/test-support/terminal';
import type Docker from 'dockerode';
import { describe, it } from 'vitest';
import { createDockerSandbox } from '../src/index.js';
import { SKIP, useEngine } from './engine.js';

const file = useEngine();
let container: Docker.Container | undefined;

/** A handle borrowing this file's container; `scriptPath` as given. */
async function handle(scriptPath?: string): ReturnType<typeof createDockerSandbox> {
  container ??= await file.container();
  return createDockerSandbox({ docker: file.docker, container: container.id, ...(scriptPath === undefined ? {} : { scriptPath }) });
}

unless(describe, SKIP)('adapter-docker on a terminal', () => {
  it('runs a command on a terminal of the size asked, its bytes raw as stdout, its status exact, resize through the Engine', async () => {
    await using sb = await handle();
    await expectTerminalBasics(sb);
  }, 60_000);

  it("runs a background command on a terminal that util-linux's script holds in the container: listed with its size, resized from its starter and from an attach, end-of-file at once, its status exact", async () => {
    await using sb = await handle();
    await using other = await handle();
    await expectBackgroundTerminal(sb, other);
  }, 60_000);

  it('refuses a background command on a terminal where the image has no script, naming it, having made no record', async () => {
    await using sb = await handle('/nonexistent/script');
    await expectNoScriptRefusal(sb, '/nonexistent/script');
  }, 60_000);
});
