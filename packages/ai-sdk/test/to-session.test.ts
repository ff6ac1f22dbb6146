// toSandboxSession over the local adapter: processes (spawn, wait, kill, run, abort).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalSandbox, localBackend } from '@sandstream/adapter-local';
import { CapabilityNotSupported } from '@sandstream/types';
import { defineSandbox } from '@sandstream/types/runtime';
import { ended, isLive } from '@sandstream/test-support/processes';
import { toSandboxSession } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ai-sdk-session-'));
const sandbox = createLocalSandbox({ graceMs: 500 });
const session = toSandboxSession(sandbox, { cwd: dir });

afterAll(async () => {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Reads a byte stream as text until `done(text)` holds, keeping the reader for more. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, done: (text: string) => boolean): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  while (!done(text)) {
    const { value, done: end } = await reader.read();
    if (end) throw new Error(`the stream ended after ${JSON.stringify(text)}`);
    text += decoder.decode(value, { stream: true });
  }
  return text;
}

/** Reads a byte stream to its end (a stream already read from is fine, unlike with `Response`). */
async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let out = '';
  for await (const part of stream as unknown as AsyncIterable<Uint8Array>) out += decoder.decode(part, { stream: true });
  return out + decoder.decode();
}

describe('toSandboxSession: processes', () => {
  it('spawn streams stdout while the command runs, takes stdin, and wait() gives the exit code', async () => {
    const proc = await session.spawn({ command: 'echo ready; read x; echo "got $x"; echo oops >&2; exit 3', stdin: true });
    expect(proc.pid).toBeGreaterThan(0);
    const reader = proc.stdout.getReader();
    // The command is blocked on `read` until stdin is written: "ready" arrived before its exit.
    expect(await readUntil(reader, (t) => t.includes('\n'))).toBe('ready\n');
    const writer = proc.stdin.getWriter();
    await writer.write(new TextEncoder().encode('go\n'));
    await writer.close();
    expect(await readUntil(reader, (t) => t.endsWith('got go\n'))).toBe('got go\n');
    reader.releaseLock();
    const [rest, stderr, status] = await Promise.all([text(proc.stdout), text(proc.stderr), proc.wait()]);
    expect({ rest, stderr, status }).toEqual({ rest: '', stderr: 'oops\n', status: { exitCode: 3 } });
  });

  it('spawn delivers bytes exactly, both streams apart', async () => {
    const proc = await session.spawn({ command: "printf '\\000\\377\\n'; printf 'e' >&2" });
    const [out, err] = await Promise.all([new Response(proc.stdout).arrayBuffer(), text(proc.stderr)]);
    expect([...new Uint8Array(out)]).toEqual([0, 255, 10]);
    expect(err).toBe('e');
    expect(await proc.wait()).toEqual({ exitCode: 0 });
    expect('stdin' in proc).toBe(false);
  });

  it('wait() resolves when nobody reads the streams', async () => {
    const proc = await session.spawn({ command: 'head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2; exit 7' });
    expect(await proc.wait()).toEqual({ exitCode: 7 });
  });

  it('kill() ends the whole tree, is idempotent, and wait() reports the shell status of SIGTERM', async () => {
    const proc = await session.spawn({ command: 'sleep 300 & echo $!; wait' });
    const child = Number(await readUntil(proc.stdout.getReader(), (t) => t.endsWith('\n')));
    expect(isLive(child)).toBe(true);
    await proc.kill();
    await proc.kill();
    await ended(child, 5_000, 'the background sleep');
    expect(await proc.wait()).toEqual({ exitCode: 128 + 15 });
  });

  it('abortSignal ends the tree, and wait() rejects with the abort reason', async () => {
    const controller = new AbortController();
    const proc = await session.spawn({ command: 'sleep 300 & echo $!; wait', abortSignal: controller.signal });
    const child = Number(await readUntil(proc.stdout.getReader(), (t) => t.endsWith('\n')));
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(proc.wait()).rejects.toBe(reason);
    await ended(child, 5_000, 'the background sleep');
  });

  it('spawn with stdin rejects before starting on a sandbox without the stdin capability', async () => {
    const backend = localBackend();
    const noStdin = defineSandbox({ ...backend, capabilities: { ...backend.capabilities, stdin: false } });
    try {
      const marker = join(dir, 'never-started');
      await expect(toSandboxSession(noStdin).spawn({ command: `touch ${marker}`, stdin: true })).rejects.toBeInstanceOf(CapabilityNotSupported);
      expect((await session.stat({ path: marker })) === null).toBe(true);
    } finally {
      await noStdin.close();
    }
  });

  it('run buffers both streams, with env, a relative workingDirectory, and 128 + n for a signal', async () => {
    await session.run({ command: 'mkdir -p sub' });
    expect(await session.run({ command: 'echo "$V"; pwd; echo err >&2; exit 4', env: { V: 'val' }, workingDirectory: 'sub' })).toEqual({
      exitCode: 4,
      stdout: `val\n${join(dir, 'sub')}\n`,
      stderr: 'err\n',
    });
    expect((await session.run({ command: 'kill -KILL $$' })).exitCode).toBe(128 + 9);
  });

  it('run rejects with the abort reason when aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('enough');
    const running = session.run({ command: 'echo started; sleep 300', abortSignal: controller.signal });
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
  });

  it('describes the sandbox and its base directory', () => {
    expect(session.description).toContain('local');
    expect(session.description).toContain(dir);
    expect(toSandboxSession(sandbox, { description: 'mine' }).description).toBe('mine');
  });
});
