// The exec tool and toSandboxSession driven by the real `ai` package and its mock model.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { ended } from '@sandstream/test-support/processes';
import { execTool, toSandboxSession, type ExecToolOutput, type ExecToolProgress, type ExecToolResult } from '../src/index.js';
import { toolCallingModel, toolResultsShown } from './model.js';

const dir = mkdtempSync(join(tmpdir(), 'ai-sdk-exec-'));
const sandbox = createLocalSandbox({ graceMs: 500 });

afterAll(async () => {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the tool's execute outside the AI SDK, collecting what it yields. */
async function outputs(exec: ReturnType<typeof execTool>, input: Parameters<NonNullable<typeof exec.execute>>[0]): Promise<ExecToolOutput[]> {
  const all: ExecToolOutput[] = [];
  const stream = exec.execute!(input, { toolCallId: 'direct', messages: [], context: {} }) as AsyncIterable<ExecToolOutput>;
  for await (const output of stream) all.push(output);
  return all;
}

describe('execTool', () => {
  it('streamText shows preliminary results while the command runs, then the final one, which alone reaches the model', async () => {
    const go = join(dir, 'go');
    // The command waits until the test saw "ready" in a preliminary result: it proves the result came before the exit.
    const command = `echo ready; while [ ! -e '${go}' ]; do sleep 0.01; done; echo line2; echo warn >&2; printf tail; exit 3`;
    const model = toolCallingModel('exec', { command, timeout: 60_000 });
    const result = streamText({ model, tools: { exec: execTool(sandbox) }, prompt: 'run it', stopWhen: stepCountIs(2) });
    const preliminary: ExecToolProgress[] = [];
    const finals: ExecToolResult[] = [];
    for await (const part of result.fullStream) {
      if (part.type !== 'tool-result') continue;
      const output = part.output as ExecToolOutput;
      // Every value the generator yields is passed on as preliminary, the last one too; then the last comes as the result.
      if (part.preliminary !== true) finals.push(output as ExecToolResult);
      else if (output.status === 'running') {
        preliminary.push(output);
        if (output.tail.includes('ready')) writeFileSync(go, '');
      }
    }
    expect(preliminary[0]).toMatchObject({ status: 'running', tail: '', stdoutLines: 0, stderrLines: 0 });
    expect(preliminary.some((p) => p.tail === 'ready\n' && p.stdoutLines === 1 && p.stdoutBytes === 6)).toBe(true);
    expect(existsSync(go)).toBe(true);
    expect(finals).toEqual([
      expect.objectContaining({
        status: 'exited',
        exitCode: 3,
        signal: null,
        timedOut: false,
        truncated: false,
        stdout: 'ready\nline2\ntail',
        stderr: 'warn\n',
        stdoutLines: 3,
        stderrLines: 1,
      }),
    ]);
    // The model sees only the final result.
    expect(toolResultsShown(model, 'doStreamCalls')).toEqual([{ type: 'json', value: finals[0] }]);
    expect(await result.text).toBe('done');
  });

  it('generateText runs the tool and hands the model its final result', async () => {
    const model = toolCallingModel('exec', { command: 'echo "$GREETING"; pwd', cwd: dir, env: { GREETING: 'hi' } });
    const result = await generateText({ model, tools: { exec: execTool(sandbox) }, prompt: 'run it', stopWhen: stepCountIs(2) });
    const output = result.steps[0]!.toolResults[0]!.output as ExecToolResult;
    expect(output).toMatchObject({ status: 'exited', exitCode: 0, stdout: `hi\n${dir}\n`, stdoutLines: 2 });
    expect(toolResultsShown(model, 'doGenerateCalls')).toEqual([{ type: 'json', value: output }]);
    expect(result.text).toBe('done');
  });

  it('the abortSignal of the generation ends the command and its whole tree', async () => {
    const controller = new AbortController();
    const model = toolCallingModel('exec', { command: 'sleep 300 & echo $!; wait' });
    const result = streamText({ model, tools: { exec: execTool(sandbox) }, prompt: 'run it', abortSignal: controller.signal });
    let child: number | undefined;
    try {
      for await (const part of result.fullStream) {
        if (part.type === 'tool-result' && part.preliminary === true && (part.output as ExecToolProgress).stdoutLines === 1) {
          child = Number((part.output as ExecToolProgress).tail);
          controller.abort();
        }
      }
    } catch {
      // How the stream ends on abort is the AI SDK's business; the tree's end is this test's.
    }
    expect(child).toBeGreaterThan(0);
    await ended(child!, 5_000, 'the background sleep');
  });

  it('counts every line past the cap, keeps the cap, and flags the truncation', async () => {
    const all = await outputs(execTool(sandbox, { maxOutputBytes: 10 }), { command: 'seq 1 100000' });
    expect(all.at(-1)).toMatchObject({ status: 'exited', exitCode: 0, truncated: true, stdout: '1\n2\n3\n4\n5\n', stdoutLines: 100000 });
  });

  it('a preliminary tail is bounded and holds the latest output', async () => {
    const all = await outputs(execTool(sandbox, { tailChars: 8, progressIntervalMs: 0 }), { command: 'seq 1 2000' });
    const running = all.filter((o): o is ExecToolProgress => o.status === 'running');
    const full = Array.from({ length: 2000 }, (_, i) => `${i + 1}\n`).join('');
    expect(running.length).toBeGreaterThan(1);
    // Each tail is at most 8 characters, and a piece of the output as it was when shown.
    for (const { tail, stdoutBytes } of running) {
      expect(tail.length).toBeLessThanOrEqual(8);
      expect(full.slice(0, stdoutBytes).endsWith(tail)).toBe(true);
    }
  });

  it('terminates the command at its timeout and says so', async () => {
    const all = await outputs(execTool(sandbox), { command: 'sleep 300', timeout: 200 });
    expect(all.at(-1)).toMatchObject({ status: 'exited', timedOut: true, exitCode: null, signal: 'SIGTERM' });
  });

  it('writes stdin and closes it', async () => {
    const all = await outputs(execTool(sandbox), { command: 'tr a-z A-Z', stdin: 'shout\n' });
    expect(all.at(-1)).toMatchObject({ exitCode: 0, stdout: 'SHOUT\n' });
  });

  it('bad input from the model becomes a tool error, not a run', async () => {
    const model = toolCallingModel('exec', { cmd: 'touch x' });
    const result = await generateText({ model, tools: { exec: execTool(sandbox) }, prompt: 'run it' });
    expect(result.steps[0]!.content.map((part) => part.type)).toContain('tool-error');
  });
});

describe('toSandboxSession as experimental_sandbox', () => {
  it('reaches a tool through the AI SDK, which runs a command and reads a file with it', async () => {
    const session = toSandboxSession(sandbox, { cwd: dir });
    const probe = tool({
      inputSchema: z.object({ text: z.string() }),
      async execute({ text }, { experimental_sandbox: sandboxSession }) {
        await sandboxSession!.writeTextFile({ path: 'note.txt', content: text });
        const { stdout } = await sandboxSession!.run({ command: 'wc -c < note.txt' });
        return { size: Number(stdout), back: await sandboxSession!.readTextFile({ path: 'note.txt' }) };
      },
    });
    const model = toolCallingModel('probe', { text: 'written in the sandbox' });
    const result = await generateText({ model, tools: { probe }, prompt: 'go', experimental_sandbox: session });
    expect(result.steps[0]!.toolResults[0]!.output).toEqual({ size: 22, back: 'written in the sandbox' });
  });
});
