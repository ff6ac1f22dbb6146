/**
 * The adapter's own behaviour on the emulator: the early command id, the
 * requests a command costs, the stdin protocol (chunks, offsets, resends, uncertain delivery), the probe,
 * the server-side backstop, error mapping, options and the kit hooks.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import {
  CapabilityNotSupported,
  InvalidArgument,
  StdinClosed,
  TransportError,
  type Sandbox,
} from '@sandstream/types';
import { createVercelSandbox, decodeStatus, STDIN_CHUNK_BYTES } from '../src/index.js';
import createSandbox, { conformanceHooks, credentialsFromEnv } from '../src/conformance.js';
import { VercelEmulator } from '../src/emulator/index.js';
import { testSandbox, until, useEmulator, within } from './helpers.js';

const emulator = useEmulator();

/** The API's id of the command whose process (the supervisor's command) has pid `commandId`. */
async function apiIdOf(commandId: string | undefined): Promise<string> {
  // The pid is reported before the command execs through setsid and env: while one of those
  // execs runs, its environ (where the emulator's tag is) can read empty, so look again a while.
  let cmdId: string | undefined;
  await until(() => (cmdId = emulator().processes().find((p) => p.pid === Number(commandId))?.cmdId) !== undefined, 5_000, `the process ${commandId}`);
  return cmdId!;
}

function stdinRequests(cmdId: string) {
  return emulator().requests.filter((r) => r.path.endsWith(`/cmd/${cmdId}/stdin`));
}

describe('the early command id', () => {
  it("is the command's pid, from the supervisor's start report, set once started() resolves, before the command wrote anything, and stable", async () => {
    const sb = await testSandbox();
    // The command writes only once the test has looked at it: a fixed sleep ran out first beside a second suite.
    const dir = mkdtempSync(join(tmpdir(), 'sandstream-early-id-'));
    try {
      const script = 'while [ ! -e "$1/go" ]; do sleep 0.01; done; echo late';
      await using proc = sb.stream(['sh', '-c', script, 'sh', dir]);
      await proc.started();
      const id = proc.commandId;
      expect(id).toMatch(/^\d+$/);
      // The id names a live process of a command the service knows, the shell of argv itself. While
      // the supervisor's setsid and env exec, the pid's command line is theirs: look again a while.
      const cmdline = (): string => emulator().processes().find((p) => p.pid === Number(id))?.cmdline ?? '';
      await until(() => cmdline().includes(script), 5_000, `the process ${id} running the shell of argv`);
      writeFileSync(join(dir, 'go'), '');
      const result = await proc.wait();
      expect(result.exitCode).toBe(0);
      expect(proc.commandId).toBe(id);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('requests per command', () => {
  it('run() of a command that ends by itself is one request, the attached start, as the raw runCommand', async () => {
    const plain = await VercelEmulator.start({ stdin: false });
    try {
      const sb = await createVercelSandbox({ ...plain.credentials, fetch: plain.fetch });
      try {
        const before = plain.requests.length;
        const result = await sb.run(['true']);
        expect(result.exitCode).toBe(0);
        expect(plain.requests.slice(before).map((r) => r.route)).toEqual(['start-command']);
        const streamed = sb.stream(['sh', '-c', 'echo a; echo b >&2']);
        let text = '';
        for await (const chunk of streamed) text += new TextDecoder().decode(chunk.data);
        expect(text.split('\n').sort()).toEqual(['', 'a', 'b']);
        expect(plain.requests.slice(before).map((r) => r.route)).toEqual(['start-command', 'start-command']);
      } finally {
        await sb.close();
      }
    } finally {
      await plain.close();
    }
  });
});

describe('standard input', () => {
  it('sends a large write in chunks of at most 512 KiB, each with the confirmed offset, after one empty probe', async () => {
    const sb = await testSandbox();
    await using proc = sb.stream(['sh', '-c', 'wc -c'], { stdin: 'pipe' });
    await proc.started();
    const cmdId = await apiIdOf(proc.commandId);
    const size = 2 * STDIN_CHUNK_BYTES + 1234;
    await proc.stdin!.write(new Uint8Array(size).fill(97));
    await proc.stdin!.end();
    const chunks: string[] = [];
    for await (const chunk of proc) chunks.push(new TextDecoder().decode(chunk.data));
    expect(chunks.join('').trim()).toBe(String(size));
    const bodies = stdinRequests(cmdId).map((r) => r.body as { offset: number; data: string; close?: boolean });
    expect(bodies[0]).toEqual({ offset: 0, data: '' });
    const writes = bodies.filter((b) => b.data !== '');
    expect(writes.map((b) => b.offset)).toEqual([0, STDIN_CHUNK_BYTES, 2 * STDIN_CHUNK_BYTES]);
    expect(writes.every((b) => Buffer.from(b.data, 'base64').byteLength <= STDIN_CHUNK_BYTES)).toBe(true);
    expect(bodies.at(-1)).toMatchObject({ close: true, offset: size });
  });

  it('resends after 503, 429 and a lost answer with the same body, and nothing arrives twice', async () => {
    const sb = await testSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    await proc.started();
    const cmdId = await apiIdOf(proc.commandId);
    await proc.stdin!.write('first\n');
    emulator().inject({ kind: 'http-status', status: 503, method: 'POST', path: /\/stdin$/ });
    emulator().inject({ kind: 'http-status', status: 429, retryAfterSeconds: 0, method: 'POST', path: /\/stdin$/ });
    await proc.stdin!.write('second\n');
    // Served, then the answer is lost: the resend carries the same offset, and the service skips it.
    emulator().inject({ kind: 'http-status', status: 502, method: 'POST', path: /\/stdin$/, served: true });
    await proc.stdin!.write('third\n');
    await proc.stdin!.end();
    let text = '';
    for await (const chunk of proc) text += new TextDecoder().decode(chunk.data);
    expect(text).toBe('first\nsecond\nthird\n');
    const thirds = stdinRequests(cmdId).filter((r) => (r.body as { data: string }).data === Buffer.from('third\n').toString('base64'));
    expect(thirds.map((r) => r.status)).toEqual([502, 200]);
    expect(new Set(thirds.map((r) => JSON.stringify(r.body))).size).toBe(1);
  });

  it('an uncertain write rejects with TransportError and refuses later writes; end() still closes', async () => {
    const sb = await testSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    await proc.started();
    await proc.stdin!.write('ok\n');
    emulator().inject({ kind: 'http-status', status: 500, method: 'POST', path: /\/stdin$/, served: true });
    const error = await proc.stdin!.write('maybe\n').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    const later = await proc.stdin!.write('more\n').catch((e: unknown) => e);
    expect(later).toBeInstanceOf(TransportError);
    await within(10_000, proc.stdin!.end(), 'end()');
    let text = '';
    for await (const chunk of proc) text += new TextDecoder().decode(chunk.data);
    // The uncertain bytes did arrive here (the answer was lost after the write): never twice.
    expect(text).toBe('ok\nmaybe\n');
  });

  it('a command that exited rejects writes with StdinClosed', async () => {
    const sb = await testSandbox();
    await using proc = sb.stream(['true'], { stdin: 'pipe' });
    await proc.wait();
    await expect(proc.stdin!.write('late')).rejects.toBeInstanceOf(StdinClosed);
  });

  it('without a writer or input, the command reads end-of-file at once', async () => {
    const sb = await testSandbox();
    const result = await within(10_000, sb.run(['sh', '-c', 'cat; echo eof']), 'run');
    expect(result.stdoutText).toBe('eof\n');
  });
});

describe('a service without the stdin endpoint', () => {
  it('is probed once: stdin is not advertised, and input is refused before anything runs', async () => {
    const plain = await VercelEmulator.start({ stdin: false });
    try {
      const sb = await createVercelSandbox({ ...plain.credentials, fetch: plain.fetch });
      try {
        expect(sb.capabilities.stdin).toBe(false);
        await expect(sb.run(['cat'], { input: 'x' })).rejects.toBeInstanceOf(CapabilityNotSupported);
        const result = await sb.run(['sh', '-c', 'cat; echo eof']);
        expect(result.stdoutText).toBe('eof\n');
      } finally {
        await sb.close();
      }
      expect(plain.processes()).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});

describe('options and errors', () => {
  it('passes commandTimeoutMs as the API timeout, a server-side backstop', async () => {
    const sb = await testSandbox({ commandTimeoutMs: 60_000 });
    await sb.run(['echo', 'backstop']);
    const start = emulator().requests.find(
      (r) => r.method === 'POST' && r.path.endsWith('/cmd') && JSON.stringify(r.body).includes('backstop'),
    );
    expect(start?.body).toMatchObject({ timeout: 60_000 });
  });

  it('rejects invalid options with InvalidArgument', async () => {
    await expect(createVercelSandbox({ graceMs: -1 })).rejects.toBeInstanceOf(InvalidArgument);
  });

  it('rejects an unknown option key by name, before any request (it was silently accepted)', async () => {
    const before = emulator().requests.length;
    const created = createVercelSandbox({ ...emulator().credentials, fetch: emulator().fetch, gracems: 5 } as never);
    await expect(created).rejects.toMatchObject({ name: 'InvalidArgument', key: 'options.gracems' });
    const existing = createVercelSandbox({ sandbox: {} as never, token: 'x' } as never);
    await expect(existing).rejects.toMatchObject({ key: 'options.token' });
    expect(emulator().requests.length).toBe(before);
  });

  it('maps refused credentials to a TransportError', async () => {
    const error = await createVercelSandbox({ ...emulator().credentials, token: 'wrong', fetch: emulator().fetch }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect((error as Error).message).toMatch(/401/);
  });

  it('decodes 128 + n as death by signal n, and other codes as exit codes', () => {
    expect(decodeStatus(0)).toEqual({ exitCode: 0, signal: null });
    expect(decodeStatus(137)).toEqual({ exitCode: null, signal: 'SIGKILL' });
    expect(decodeStatus(143)).toEqual({ exitCode: null, signal: 'SIGTERM' });
    expect(decodeStatus(255)).toEqual({ exitCode: 255, signal: null });
  });

  it('reads credentials from the environment', () => {
    expect(credentialsFromEnv({})).toBeUndefined();
    expect(credentialsFromEnv({ VERCEL_TOKEN: 't', VERCEL_TEAM_ID: 'a', VERCEL_PROJECT_ID: 'p' })).toEqual({
      token: 't',
      teamId: 'a',
      projectId: 'p',
    });
    expect(credentialsFromEnv({ VERCEL_OIDC_TOKEN: 'x' })).toBe('oidc');
  });
});

unless(
  describe,
  credentialsFromEnv() === undefined ? undefined : 'Vercel credentials are set in the environment, so the hooks would use the real service',
)('conformance hooks without credentials', () => {
  it('setup starts the emulator for the default export; attach observes the same sandbox until the owner closes it', async () => {
    await conformanceHooks.setup();
    let owner: Sandbox | undefined;
    try {
      owner = await createSandbox();
      const observer = await conformanceHooks.attach(owner);
      const marker = `/tmp/sandstream-attach-${process.pid}-${Date.now()}`;
      await owner.run(['sh', '-c', `echo seen > ${marker}`]);
      expect((await observer.run(['cat', marker])).stdoutText).toBe('seen\n');
      await observer.run(['rm', '-f', marker]);
      // The observer's close() leaves the environment running.
      await observer.close();
      expect((await owner.run(['true'])).exitCode).toBe(0);
      const second = await conformanceHooks.attach(owner);
      await owner.close();
      // The owner's close() stopped the sandbox: the observer's commands fail.
      await expect(second.run(['true'])).rejects.toBeInstanceOf(TransportError);
      await second.close();
    } finally {
      await owner?.close();
      await conformanceHooks.teardown();
    }
  });
});
