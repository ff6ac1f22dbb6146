// What ends the exec tool's command when its consumer stops reading, driven by the real `ai` package:
// the command writes the pids of its tree (the shell and two sleeps), says "started" and goes silent;
// the test stops reading there, then polls /proc until that tree is gone (a zombie counts as gone),
// bounded by the tool's idle progress interval, the sandbox's grace period and a margin scaled from
// the latency measured on the way (test/tree.ts).
//
// Why streamText and experimental_streamTextLowMemory differ (ai 7.0.173, dist/index.js):
// executeToolCall runs `for await (const part of executeTool(...))` over the tool's generator and
// hands each preliminary result to `controller.enqueue` of executeToolsFromStream's TransformStream;
// it passes the tool the generation's abortSignal (merged with the tool timeout), which a cancelled
// stream never aborts. streamText (replay) gives fullStream a branch of `baseStream.tee()`
// (teeStream): a break cancels that branch only, the other one stays for result.text, result.steps
// and the rest, so nothing upstream is cancelled and the tool's generator is pulled to its end.
// experimental_streamTextLowMemory has no tee: the cancel reaches executeToolsFromStream's stream,
// the next enqueue throws, and the for-await's exit calls the generator's return(): at the tool's
// next yield, which a silent command only reaches by the tool's idle progress results.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { experimental_streamTextLowMemory, streamText } from 'ai';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { execTool, type ExecToolOutput } from '../src/index.js';
import { toolCallingModel } from './model.js';
import { marginOf, survivors, treeIn } from './tree.js';

const GRACE_MS = 500;
/** The exec tool's preliminary results while the command is silent come at most this far apart (its `progressIntervalMs` being less). */
const IDLE_PROGRESS_MS = 1000;

const dir = mkdtempSync(join(tmpdir(), 'ai-sdk-stop-'));
const sandbox = createLocalSandbox({ graceMs: GRACE_MS });

afterAll(async () => {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

let runs = 0;

/** A silent command of three processes that writes their pids to the file it is given, then says "started". */
function silentTree(): { command: string; pids: string } {
  runs += 1;
  const pids = join(dir, `pids-${runs}`);
  const command = `sleep 300 & echo $! > '${pids}'; sleep 301 & echo $! >> '${pids}'; echo $$ >> '${pids}'; echo started; wait`;
  return { command, pids };
}

const started = (output: ExecToolOutput): boolean => output.status === 'running' && output.tail.includes('started');

/**
 * Streams a generation whose model calls the exec tool on {@link silentTree}, and breaks out of
 * `fullStream` at the first preliminary result showing "started". The margin scales with the time
 * from the call to that result (spawning included).
 */
async function breakOnceStarted(stream: typeof streamText | typeof experimental_streamTextLowMemory, abortSignal?: AbortSignal) {
  const { command, pids } = silentTree();
  const model = toolCallingModel('exec', { command });
  const begin = performance.now();
  const result = stream({ model, tools: { exec: execTool(sandbox) }, prompt: 'run it', ...(abortSignal !== undefined && { abortSignal }) });
  let latencyMs: number | undefined;
  for await (const part of result.fullStream) {
    if (part.type === 'tool-result' && started(part.output as ExecToolOutput)) {
      latencyMs = performance.now() - begin;
      break;
    }
  }
  const broke = performance.now();
  expect(latencyMs).toBeDefined();
  const tree = treeIn(pids);
  expect(tree).toHaveLength(3);
  return { tree, broke, margin: marginOf(latencyMs!) };
}

describe('a consumer that stops reading', () => {
  it('a break out of experimental_streamTextLowMemory fullStream ends the command and its whole tree', async () => {
    const { tree, broke, margin } = await breakOnceStarted(experimental_streamTextLowMemory);
    // The AI SDK sees the cancel at the tool's next preliminary result, then SIGTERM, and SIGKILL after the grace period.
    expect(await survivors(tree, broke + IDLE_PROGRESS_MS + GRACE_MS + margin)).toEqual([]);
  });

  it('a break out of streamText fullStream leaves the command running (the AI SDK runs the tool on); aborting the generation ends its whole tree', async () => {
    const controller = new AbortController();
    try {
      const { tree, broke, margin } = await breakOnceStarted(streamText, controller.signal);
      // Pinned, as README.md states it: past the bound in which the low-memory break ended it, the whole tree still runs.
      expect(await survivors(tree, broke + IDLE_PROGRESS_MS + GRACE_MS + margin)).toEqual(tree);
      const aborted = performance.now();
      controller.abort();
      expect(await survivors(tree, aborted + GRACE_MS + margin)).toEqual([]);
    } finally {
      controller.abort();
    }
  });

  it("the generator's return() ends the command and its whole tree, though the command is silent and a next() is pending", async () => {
    const { command, pids } = silentTree();
    const begin = performance.now();
    const generator = execTool(sandbox).execute!({ command }, { toolCallId: 'direct', messages: [], context: {} }) as AsyncGenerator<ExecToolOutput, void>;
    for (;;) {
      const step = await generator.next();
      expect(step.done).toBe(false);
      if (started(step.value as ExecToolOutput)) break;
    }
    const margin = marginOf(performance.now() - begin);
    const tree = treeIn(pids);
    expect(tree).toHaveLength(3);
    // A pull that no output answers, then return(): an async generator runs the return once the pull settles.
    const pending = generator.next();
    const returned = generator.return(undefined);
    const stopped = performance.now();
    expect(await survivors(tree, stopped + IDLE_PROGRESS_MS + GRACE_MS + margin)).toEqual([]);
    expect(await pending).toMatchObject({ done: false, value: { status: 'running', tail: 'started\n' } });
    expect(await returned).toEqual({ done: true, value: undefined });
  });
});
