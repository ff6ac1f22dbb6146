/**
 * Through the Docker adapter on a real dockerd: the stdio MCP "everything"
 * server driven by the MCP client SDK, through stream() with a stdin writer
 * and stderr flowing alongside stdout. The container runs the host's node
 * (bind-mounted, with its libraries in the test image) on the repository's
 * own copy of the server.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import { describeMcpSession } from '@sandstream/test-support/mcp-session';
import { unless } from '@sandstream/test-support/skips';
import type Docker from 'dockerode';
import { createDockerSandbox } from '../src/index.js';
import { SKIP, useEngine } from './engine.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url)).replace(/\/$/, '');
const file = useEngine({ librariesOf: [process.execPath] });
let container: Docker.Container | undefined;
const open: Sandbox[] = [];

afterAll(async () => {
  await Promise.all(open.map((sb) => sb.close()));
});

async function testSandbox(): Promise<Sandbox> {
  container ??= await file.container({ binds: [`${process.execPath}:${process.execPath}:ro`, `${REPO}:${REPO}:ro`] });
  const sb = await createDockerSandbox({ docker: file.docker, container: container.id, graceMs: 500 });
  open.push(sb);
  return sb;
}

unless(describe, SKIP)('adapter-docker: an MCP session on a real Engine', () => {
  describeMcpSession(testSandbox);
});
