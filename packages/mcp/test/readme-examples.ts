// The examples of README.md, type-checked here (npm run typecheck); test/readme.test.ts checks
// that the README's blocks are contained in this file, and runs all but the stdio one.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createLocalSandbox } from '@sandstream/adapter-local';
import type { Sandbox } from '@sandstream/types';
import { createExecServer, type ExecOutcome } from '../src/index.js';

/** The README's library example; returns what it printed and the sandbox, to check it was closed. */
export async function libraryExample(): Promise<{ outcome: ExecOutcome; text: string; sandbox: Sandbox }> {
const server = createExecServer(createLocalSandbox(), { outputBudget: 10_000, defaultTimeoutMs: 20_000 });
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const client = new Client({ name: 'example', version: '1.0.0' });
await client.connect(clientSide);
const result = await client.callTool({ name: 'sandbox_exec', arguments: { command: 'echo hello; exit 3' } });
const outcome = result.structuredContent as unknown as ExecOutcome; // the status, for the program
const [text] = result.content as [{ type: 'text'; text: string }]; // the status and the output, for a model
console.log(outcome.exitCode, text.text); // 3 'exit code 3; 4 ms\n<stdout>\nhello\n</stdout>'
await client.close(); // ends the session: the server closes the sandbox
await server.closed;
  return { outcome, text: text.text, sandbox: server.sandbox };
}

/** The README's progress example: what it printed, and the sandbox. */
export async function progressExample(): Promise<{ outcome: ExecOutcome; lines: string[]; sandbox: Sandbox }> {
const server = createExecServer(createLocalSandbox());
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const client = new Client({ name: 'example', version: '1.0.0' });
await client.connect(clientSide);
const lines: string[] = [];
const result = await client.callTool(
  { name: 'sandbox_exec', arguments: { command: 'for i in 1 2 3 4 5 6; do echo "step $i"; sleep 0.5; done', timeout: 120_000 } },
  undefined,
  {
    onprogress: (progress) => lines.push(progress.message ?? ''),
    // Each line restarts the client's clock: the call fails after 2 s of silence, not after 2 s.
    resetTimeoutOnProgress: true,
    timeout: 2_000,
    maxTotalTimeout: 600_000,
  },
);
const outcome = result.structuredContent as unknown as ExecOutcome;
console.log(outcome.exitCode, lines); // 0 [ 'step 1\n', 'step 2\n', ... ]
await client.close();
await server.closed;
  return { outcome, lines, sandbox: server.sandbox };
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

/** The README's task example: what it printed, and the sandbox. */
export async function taskExample(): Promise<{ taskId: string | undefined; outcome: ExecOutcome | undefined; sandbox: Sandbox }> {
const server = createExecServer(createLocalSandbox());
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const client = new Client({ name: 'example', version: '1.0.0' });
await client.connect(clientSide);
const call = { name: 'sandbox_exec', arguments: { command: 'sleep 2; echo built', timeout: 300_000 } };
let taskId: string | undefined;
let outcome: ExecOutcome | undefined;
// The call is answered at once with a task; the client polls it (tasks/get) and reads its result (tasks/result).
for await (const message of client.experimental.tasks.callToolStream(call, CallToolResultSchema, { task: { ttl: 600_000 } })) {
  if (message.type === 'taskCreated') taskId = message.task.taskId; // cancel with client.experimental.tasks.cancelTask(taskId)
  if (message.type === 'result') outcome = message.result.structuredContent as unknown as ExecOutcome;
  if (message.type === 'error') throw message.error;
}
console.log(taskId, outcome?.exitCode); // 'f3c1…' 0
await client.close();
await server.closed;
  return { taskId, outcome, sandbox: server.sandbox };
}
