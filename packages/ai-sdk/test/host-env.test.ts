// The exec tool passes no environment of its own: a secret planted in this
// process's environment (where an agent keeps its model's API key) reaches
// a command only as the sandbox it was given lets it. Through the real `ai`
// package's tool calling, on the local sandboxes the README recommends.
import { randomBytes } from 'node:crypto';
import { generateText, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSandbox, type LocalSandboxOptions } from '@sandstream/adapter-local';
import { unless } from '@sandstream/test-support/skips';
import { execTool, type ExecToolResult } from '../src/index.js';
import { toolCallingModel } from './model.js';
import { isolation } from './isolation.js';

const NAME = 'SANDSTREAM_TEST_SECRET';
const secret = `sk-${randomBytes(16).toString('hex')}`;

// A sandbox reads this process's environment when it is created: each test creates its own after this.
beforeAll(() => {
  process.env[NAME] = secret;
});
afterAll(() => {
  delete process.env[NAME];
});


/** What `env` prints when a model calls the exec tool over a local sandbox made with `options`. */
async function envSeenByTheTool(options: LocalSandboxOptions): Promise<string> {
  const sandbox = createLocalSandbox(options);
  try {
    const model = toolCallingModel('exec', { command: 'env' });
    const result = await generateText({ model, tools: { exec: execTool(sandbox) }, prompt: 'print the environment', stopWhen: stepCountIs(2) });
    const output = result.steps[0]!.toolResults[0]!.output as ExecToolResult;
    expect(output).toMatchObject({ status: 'exited', exitCode: 0 });
    // An environment was printed: an empty output would pass the checks for the wrong reason.
    expect(output.stdout).toMatch(/^PATH=/m);
    return output.stdout;
  } finally {
    await sandbox.close();
  }
}

describe("execTool and this process's environment", () => {
  unless(it, isolation)("isolation: 'namespaces': a secret in this process's environment is not in the command's", async () => {
    expect(await envSeenByTheTool({ isolation: 'namespaces' })).not.toContain(secret);
  });

  it("plain, with hostEnv: []: a secret in this process's environment is not in the command's", async () => {
    expect(await envSeenByTheTool({ hostEnv: [] })).not.toContain(secret);
  });

  // The controls: the planted secret does reach a command when the sandbox lets it, so the checks above can fail.
  unless(it, isolation)(`isolation: 'namespaces', hostEnv: ['${NAME}']: the named secret is in the command's environment`, async () => {
    expect(await envSeenByTheTool({ isolation: 'namespaces', hostEnv: [NAME] })).toMatch(new RegExp(`^${NAME}=${secret}$`, 'm'));
  });

  it("plain, without hostEnv: the whole of this process's environment, the secret too (adapter-local's default)", async () => {
    expect(await envSeenByTheTool({})).toMatch(new RegExp(`^${NAME}=${secret}$`, 'm'));
  });
});
