// The examples of README.md, type-checked here (npm run typecheck); test/readme.test.ts checks
// that the README's blocks are contained in this file, and runs them.
import { createJustBashSandbox } from '@ai-sdk/sandbox-just-bash';
import { stepCountIs, streamText, type LanguageModel } from 'ai';
import { createLocalSandbox } from '@sandstream/adapter-local';
import type { Sandbox } from '@sandstream/types';
import { execTool, fromSandboxSession, toSandboxSession } from '../src/index.js';

/** The README's agent example, with the model given (it needs namespaces: test/readme.test.ts skips it where they are unavailable). */
export async function agentExample(model: LanguageModel): Promise<void> {
const sandbox = createLocalSandbox({ isolation: 'namespaces' }); // Linux only: see below
const result = streamText({
  model,
  tools: { exec: execTool(sandbox, { timeout: 60_000 }) },
  experimental_sandbox: toSandboxSession(sandbox), // for tools of yours that take one
  stopWhen: stepCountIs(5),
  prompt: 'How many files are in /etc?',
});
for await (const part of result.fullStream) {
  if (part.type !== 'tool-result') continue;
  console.log(part.preliminary === true ? 'running:' : 'result:', part.output);
}
await sandbox.close();
}

/** The README's example of stopping early, with the model and the sandbox given. */
export async function stopExample(model: LanguageModel, sandbox: Sandbox): Promise<void> {
const stop = new AbortController();
const result = streamText({
  model,
  tools: { exec: execTool(sandbox) },
  abortSignal: stop.signal, // the exec tool's command ends with it
  prompt: 'Run the test suite',
});
try {
  for await (const part of result.fullStream) {
    if (part.type !== 'tool-result' || part.dynamic === true || part.output.status !== 'running') continue;
    if (part.output.tail.includes('FAIL')) break; // seen enough
  }
} finally {
  stop.abort(); // a break alone leaves the command running
}
}

/** The README's example of an AI SDK sandbox as a Sandstream sandbox. */
export async function justBashExample(): Promise<void> {
const network = await createJustBashSandbox().createSession();
const sandbox = fromSandboxSession(network.restricted(), { name: 'just-bash', stdin: false });
const result = await sandbox.run(['sh', '-c', 'echo "$1"', 'sh', 'hello'], { timeout: 10_000 });
console.log(result.exitCode, result.stdoutText); // 0 'hello\n'
await sandbox.close();
await network.stop();
}
