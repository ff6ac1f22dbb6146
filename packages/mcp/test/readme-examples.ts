// The examples of README.md, type-checked here (npm run typecheck); test/readme.test.ts checks
// that the README's blocks are contained in this file, and runs the first.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createLocalSandbox } from '@sandstream/adapter-local';
import type { Sandbox } from '@sandstream/types';
import { createExecServer, type ExecOutcome } from '../src/index.js';

/** The README's library example; returns what it printed and the sandbox, to check it was closed. */
export async function libraryExample(): Promise<{ outcome: ExecOutcome; sandbox: Sandbox }> {
const server = createExecServer(createLocalSandbox(), { maxOutputBytes: 64 * 1024 });
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const client = new Client({ name: 'example', version: '1.0.0' });
await client.connect(clientSide);
const result = await client.callTool({ name: 'exec', arguments: { command: 'echo hello; exit 3' } });
const outcome = result.structuredContent as unknown as ExecOutcome;
console.log(outcome.exitCode, outcome.stdout); // 3 'hello\n'
await client.close(); // ends the session: the server closes the sandbox
await server.closed;
  return { outcome, sandbox: server.sandbox };
}

/** The README's stdio example: type-checked, not run (it would take over this process's stdio). */
export async function stdioExample(): Promise<void> {
const server = createExecServer(createLocalSandbox({ cwd: '/srv/project' }), { name: 'project-shell' });
await server.connect(new StdioServerTransport());
// The SDK's stdio transport does not watch for the end of its input; the session ends with it.
process.stdin.once('end', () => void server.close());
await server.closed;
process.exit(0);
}
