/**
 * What the one-process design must guarantee in place of the relay's
 * (ADR-0033; the relay's own races are gone with it):
 *
 * - nothing of the adapter's own reaches a command's output: the
 *   supervisor's reports are cut out and its shell's complaints go to
 *   /dev/null (the relay's `cat` and `rm` once wrote into a command's
 *   stderr: the soak, seeds 2 and 7 on e2b);
 * - a command ended while it starts settles and leaves nothing (a relay
 *   started late once waited forever for a writer: the 10 000-process soak,
 *   seed 7);
 * - one envd `Start` per command that ends by itself, and nothing else;
 * - a cleanup kill given up while this host ran out of file descriptors is
 *   not the last word: the tree is gone once the sandbox handle closes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';
import { isHelperStart, isSupervisorStart, leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
let envd: EnvdEmulator;
let native: E2BSdkSandbox;

beforeAll(async () => {
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID } });
  native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
});
afterAll(async () => {
  await envd?.close();
});

describe('one supervised process per command', () => {
  it('gives a command exactly its own standard error, reports cut out', async () => {
    const sb = await createE2BSandbox({ sandbox: native });
    try {
      const result = await sb.run(['sh', '-c', 'printf "err\\036\\n" >&2; printf out']);
      expect(result.stderrText).toBe('err\u001e\n');
      expect(result.stdoutText).toBe('out');
    } finally {
      await sb.close();
    }
  });

  it('costs one Start and no other request for a command that ends by itself, and the close one sweep', async () => {
    const sb = await createE2BSandbox({ sandbox: native });
    const before = envd.requests.length;
    await sb.run(['true']);
    const during = envd.requests.slice(before).map((r) => r.route);
    expect(during).toEqual(['Start']);
    expect(isSupervisorStart(envd.requests[before]!)).toBe(true);
    await sb.close();
    expect(envd.requests.length - before).toBe(2);
  });

  it('settles a command disposed as it starts, with nothing of its own in its output and nothing left', async () => {
    const sb = await createE2BSandbox({ sandbox: native, graceMs: 200 });
    try {
      for (let i = 0; i < 5; i++) {
        const proc = sb.stream(['sh', '-c', 'sleep 30 & sleep 30']);
        const chunks: string[] = [];
        const reading = (async () => {
          for await (const chunk of proc) chunks.push(new TextDecoder().decode(chunk.data));
        })().catch(() => undefined);
        await within(20_000, proc[Symbol.asyncDispose](), 'dispose as it starts');
        await reading;
        expect(chunks.join('')).toBe('');
      }
    } finally {
      await sb.close();
    }
    await waitFor(() => leftovers(RUN_ID).length === 0, 20_000, `processes left: ${leftovers(RUN_ID).join('; ')}`);
  });

  it('a SIGTERM is one SendSignal to the supervisor, which ends the whole tree', async () => {
    const sb = await createE2BSandbox({ sandbox: native });
    try {
      const proc = sb.stream(['sh', '-c', 'sleep 30 & echo up; wait']);
      const iterator = proc[Symbol.asyncIterator]();
      await within(10_000, iterator.next(), 'first output');
      const before = envd.requests.length;
      await proc.kill('SIGTERM');
      const result = await within(10_000, proc.wait(), 'the end');
      expect(result.signal).toBe('SIGTERM');
      // Beside the owner lease's renewals, which a command living past 2 s gets (spec 1.4).
      expect(envd.requests.slice(before).filter((r) => !isHelperStart('lease')(r)).map((r) => r.route)).toEqual(['SendSignal']);
    } finally {
      await sb.close();
    }
    await waitFor(() => leftovers(RUN_ID).length === 0, 20_000, `processes left: ${leftovers(RUN_ID).join('; ')}`);
  });
});
