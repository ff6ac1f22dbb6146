/**
 * Faults injected by the emulator: a command's answer broken part way (its
 * output then read from the log stream's replay), a start whose answer is
 * lost, and teardown of a tree that tries to escape.
 */
import { describe, expect, it } from 'vitest';
import { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { TransportError, type OutputChunk } from '@sandstream/types';
import type { RecordedRequest } from '../src/emulator/index.js';
import { TAG_VARIABLE } from '@sandstream/remote';
import { ended } from '@sandstream/test-support/processes';
import { until, useEmulator, testSandbox, within } from './helpers.js';

const emulator = useEmulator();

function expectedSeq(from: number, to: number): string {
  let text = '';
  for (let i = from; i <= to; i++) text += `${i}\n`;
  return text;
}

/** The API's id of the last command the emulator started whose argv holds `word`. */
function apiIdOf(word: string): string {
  const command = emulator().commands().filter((c) => c.args.includes(word) || c.args.some((a) => a.includes(word))).at(-1);
  if (command === undefined) throw new Error(`no command with ${word}`);
  return command.id;
}

/**
 * Requests whose body carries `marker`: a fault aimed at a test's own command is not taken
 * by a tree helper that a previous test's cleanup may still be starting (also POST /cmd).
 */
function carries(marker: string): (request: RecordedRequest) => boolean {
  return (request) => (JSON.stringify(request.body) ?? '').includes(marker);
}

describe('a broken answer', () => {
  it('is resumed from the log stream under run() with no lost or duplicated byte, twice in one command', async () => {
    const sb = await testSandbox();
    const marker = `resume-${Date.now()}`;
    emulator().inject({ kind: 'truncate', route: 'start-command', at: { bytes: 20_000 }, match: carries(marker) });
    emulator().inject({ kind: 'truncate', route: 'logs', at: { bytes: 90_000 }, times: 1 });
    const result = await sb.run(['sh', '-c', 'seq 1 30000; seq 1 3000 >&2; : "$1"', 'sh', marker]);
    expect(result.exitCode).toBe(0);
    expect(result.stdoutText).toBe(expectedSeq(1, 30000));
    expect(result.stderrText).toBe(expectedSeq(1, 3000));
    const broken = emulator().requests.filter((r) => (r.route === 'logs' || (r.route === 'start-command' && carries(marker)(r))) && r.status === -1);
    expect(broken.length).toBe(2);
  });

  it('is resumed under stream() while the command is still writing, in order, each byte once', async () => {
    const sb = await testSandbox();
    const marker = `live-${Date.now()}`;
    await using proc = sb.stream(['sh', '-c', 'seq 1 5000; read x; seq 5001 10000; echo done >&2; : "$1"', 'sh', marker], { stdin: 'pipe' });
    await proc.started();
    const cmdId = apiIdOf(marker);
    // The drop hits the replay of what was already written and read.
    const chunks: OutputChunk[] = [];
    let stdout = '';
    const decoder = new TextDecoder();
    for await (const chunk of proc) {
      chunks.push(chunk);
      if (chunk.stream === 'stdout') stdout += decoder.decode(chunk.data, { stream: true });
      if (stdout.endsWith('5000\n') && stdout.length === expectedSeq(1, 5000).length) {
        // The live stream breaks, and so does the first replay, part way.
        emulator().inject({ kind: 'truncate', route: 'logs', at: { bytes: 1_000 }, path: new RegExp(`/cmd/${cmdId}/logs$`) });
        expect(emulator().breakLogStreams(cmdId)).toBe(1);
        await proc.stdin!.write('go\n');
      }
    }
    expect(stdout).toBe(expectedSeq(1, 10000));
    const result = await proc.wait();
    expect(result.exitCode).toBe(0);
    // Three log requests after the broken answer: the replay cut at 1000 bytes, the one that
    // followed the command to its end, and the one that confirmed that end.
    const requests = emulator().requests.filter((r) => r.path.endsWith(`/cmd/${cmdId}/logs`));
    expect(requests.length).toBe(3);
    expect(requests[0]!.status).toBe(-1);
  });

  it('ends with a TransportError when the service sends an error record', async () => {
    const sb = await testSandbox();
    const marker = `error-${Date.now()}`;
    emulator().inject({ kind: 'error', route: 'start-command', code: 'internal', message: 'log storage failed', at: 2, match: carries(marker) });
    const error = await sb.run(['sh', '-c', 'echo a; sleep 0.2; echo b; : "$1"', 'sh', marker]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as Error).message).toMatch(/log storage failed/);
  });
});

describe('a start whose answer is lost', () => {
  it('is not retried, rejects with TransportError, and the copy that did start is ended', async () => {
    const sb = await testSandbox();
    const marker = `start-fault-${Date.now()}`;
    emulator().inject({ kind: 'http-status', status: 502, method: 'POST', path: /\/cmd$/, served: true, match: carries(marker) });
    const error = await sb.run(['sh', '-c', 'sleep 30; : "$1"', 'sh', marker]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as Error).message).toMatch(/unknown outcome/);
    const starts = emulator().requests.filter(
      (r) => r.method === 'POST' && r.path.endsWith('/cmd') && (JSON.stringify(r.body) ?? '').includes(marker),
    );
    expect(starts.length).toBe(1);
    // The one copy that ran was found by its tag and sent SIGKILL before the error was reported;
    // on a loaded machine the kernel may list a killed process a moment longer, so each is awaited.
    for (const { pid } of emulator().processes().filter((p) => p.cmdline.includes(marker))) await ended(pid, 5_000, `the started copy, pid ${pid}`);
  });

  it('where the raw SDK, under the same fault, starts the command again (two copies or more)', async () => {
    const raw = await VercelSdkSandbox.create({ ...emulator().credentials, fetch: emulator().fetch });
    const marker = `raw-start-fault-${Date.now()}`;
    emulator().inject({ kind: 'http-status', status: 502, method: 'POST', path: /\/cmd$/, served: true, match: carries(marker) });
    try {
      const command = await raw.runCommand({ cmd: 'sh', args: ['-c', 'sleep 30; : "$1"', 'sh', marker], detached: true });
      const copies = emulator().processes().filter((p) => p.cmdline.includes(marker));
      // Its retry starts a second copy (a third, if a retry also meets a broken connection).
      expect(copies.length).toBeGreaterThanOrEqual(2);
      expect(copies.some((p) => p.cmdId === command.cmdId)).toBe(true);
    } finally {
      await raw.stop();
    }
  });

  it('a 429 on the start is not retried either, and nothing runs', async () => {
    const sb = await testSandbox();
    const marker = `rate-limited-${Date.now()}`;
    emulator().inject({ kind: 'http-status', status: 429, retryAfterSeconds: 0, method: 'POST', path: /\/cmd$/, match: carries(marker) });
    const error = await sb.run(['sh', '-c', 'sleep 30; : "$1"', 'sh', marker]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    const starts = emulator().requests.filter((r) => r.path.endsWith('/cmd') && (JSON.stringify(r.body) ?? '').includes(marker));
    expect(starts.length).toBe(1);
    expect(emulator().processes().filter((p) => p.cmdline.includes(marker))).toEqual([]);
  });
});

describe('teardown', () => {
  it('kills the whole tree, including members that left the process group or the session', async () => {
    const sb = await testSandbox();
    const script = [
      'sleep 30 &',
      'setsid sleep 31 &',
      '(sh -c "sleep 32 & echo grandchild" &) ',
      'echo ready',
      'wait',
    ].join('\n');
    const proc = sb.stream(['sh', '-c', script]);
    await proc.started();
    const cmdId = apiIdOf(script);
    let seen = '';
    for await (const chunk of proc) {
      seen += new TextDecoder().decode(chunk.data);
      if (seen.includes('ready') && seen.includes('grandchild')) break;
    }
    // `break` disposed the Process: the emulator's process table shows nothing of the command.
    expect(emulator().processes().filter((p) => p.cmdId === cmdId)).toEqual([]);
    // Every member carried the command's tag; the leader's own pid was not all the kill reached.
    const tagged = emulator().requests.filter((r) => r.method === 'POST' && (JSON.stringify(r.body) ?? '').includes('sandstream-helper'));
    expect(tagged.length).toBeGreaterThan(0);
  });

  it('tags each command so its tree can be found', async () => {
    const sb = await testSandbox();
    const result = await sb.run(['sh', '-c', `printf %s "$${TAG_VARIABLE}"`]);
    expect(result.stdoutText).toMatch(/^[0-9a-f]{8}-[0-9a-f-]{36}$/);
  });

  it('after a leader exit, what it left gets SIGTERM, and the result waits for it', async () => {
    const sb = await testSandbox();
    const started = Date.now();
    const result = await within(
      10_000,
      sb.run([
        'sh',
        '-c',
        // The leader exits only once the member it leaves has its handler installed.
        'd=$(mktemp -d); (trap "echo term; exit 0" TERM; touch "$d/armed"; sleep 30 & wait) & ' +
          'until [ -e "$d/armed" ]; do sleep 0.01; done; rm -r "$d"; echo leader-done',
      ]),
      'run',
    );
    expect(result.exitCode).toBe(0);
    expect(result.stdoutText).toContain('leader-done');
    // The member it left got SIGTERM (its handler ran) before the result was reported.
    expect(result.stdoutText).toContain('term');
    await until(() => emulator().processes().length === 0, 5_000, 'the tree is gone');
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
