/**
 * Terminals on Docker (spec 1.5, ADR-0052) against a real dockerd of this file's own: the
 * transport's exec with `Tty` and `ConsoleSize`, and the kit's `pty.*` cases on a handle whose
 * manifest declares `pty`, a test-only configuration (the adapter's own manifest does not declare
 * it: `pty.background` needs a terminal a background command can keep, see the README).
 */
import { fileURLToPath } from 'node:url';
import { describeConformance } from '@sandstream/conformance/vitest';
import { severLinks } from '@sandstream/remote';
import { unless } from '@sandstream/test-support/skips';
import { expectBackgroundTerminal, expectTerminalBasics } from '@sandstream/test-support/terminal';
import type Docker from 'dockerode';
import { describe, it } from 'vitest';
import { ptySandbox } from './fixtures/pty-sandbox.mjs';
import { SKIP, useEngine } from './engine.js';

const file = useEngine();
let container: Docker.Container | undefined;

unless(describe, SKIP)('adapter-docker on a terminal', () => {
  it('runs a command on a terminal of the size asked, its bytes raw as stdout, its status exact, resize through the Engine', async () => {
    container ??= await file.container();
    const sb = ptySandbox(file.docker, container);
    try {
      await expectTerminalBasics(sb);
    } finally {
      await sb.close();
    }
  }, 60_000);

  it("runs a background command on a terminal that util-linux's script holds in the container: listed with its size, resized from its starter and from an attach, end-of-file at once, its status exact", async () => {
    container ??= await file.container();
    const sb = ptySandbox(file.docker, container);
    const other = ptySandbox(file.docker, container);
    try {
      await expectBackgroundTerminal(sb, other);
    } finally {
      await other.close();
      await sb.close();
    }
  }, 60_000);

  describeConformance({
    include: ['pty.*'],
    factory: async () => {
      container ??= await file.container();
      return ptySandbox(file.docker, container);
    },
    hooks: {
      attach: async (sandbox) => ptySandbox(file.docker, sandbox.native as Docker.Container),
      sever: (process) => severLinks(process),
      // pty.owner-crash: the owner process loads the fixture, on the same container and Engine.
      owner: (sandbox) => ({ env: { SANDSTREAM_DOCKER_CONTAINER: (sandbox.native as Docker.Container).id, DOCKER_HOST: `unix://${file.engine.socketPath}` } }),
    },
    ownerModule: fileURLToPath(new URL('./fixtures/pty-sandbox.mjs', import.meta.url)),
  });
});
