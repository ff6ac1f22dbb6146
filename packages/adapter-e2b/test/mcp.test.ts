/**
 * Through the E2B adapter on the envd emulator: the stdio MCP "everything"
 * server driven by the MCP client SDK, through stream() with a stdin writer
 * and stderr flowing alongside stdout.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import { describeMcpSession } from '@sandstream/test-support/mcp-session';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';

let envd: EnvdEmulator;
let native: E2BSdkSandbox;
const open: Sandbox[] = [];
beforeAll(async () => {
  envd = await startEnvdEmulator();
  native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
});
afterAll(async () => {
  await Promise.all(open.map((sb) => sb.close()));
  await envd?.close();
});
async function testSandbox(): Promise<Sandbox> {
  const sb = await createE2BSandbox({ sandbox: native, graceMs: 500 });
  open.push(sb);
  return sb;
}

describeMcpSession(testSandbox);
