/**
 * The three ways to authenticate, against a real sshd: a key file, a key in memory, and an
 * OpenSSH agent holding the key (ssh-agent started here on a socket in a temp directory, stopped
 * by its pid).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unless } from '@sandstream/test-support/skips';
import { afterAll, describe, expect, it } from 'vitest';
import { createSshSandbox } from '../src/index.js';
import { SKIP, useServer } from './server.js';

const scratch = mkdtempSync(join(tmpdir(), 'ss-ssh-auth-'));
let agent: ChildProcess | undefined;
afterAll(() => {
  if (agent?.pid !== undefined && agent.exitCode === null) process.kill(agent.pid, 'SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
});

/** Starts ssh-agent in the foreground on its own socket; resolves once the socket exists. */
async function startAgent(): Promise<string> {
  const socket = join(scratch, 'agent.sock');
  agent = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  while (!existsSync(socket)) {
    if (Date.now() > deadline || agent.exitCode !== null) throw new Error(`ssh-agent did not make ${socket}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return socket;
}

unless(describe, SKIP)('adapter-ssh: authentication against a real sshd', () => {
  const file = useServer();

  it('with a key in memory', async () => {
    const { privateKeyPath, ...options } = file.options();
    await using sb = await createSshSandbox({ ...options, privateKey: readFileSync(privateKeyPath!, 'utf8') });
    expect((await sb.run(['echo', 'memory'])).stdoutText).toBe('memory\n');
  });

  it('with an agent that holds the key, and no key given', async () => {
    const socket = await startAgent();
    execFileSync('ssh-add', ['-q', file.server.clientKeyPath], { env: { ...process.env, SSH_AUTH_SOCK: socket } });
    const { privateKeyPath: _unused, ...options } = file.options();
    await using sb = await createSshSandbox({ ...options, agent: socket });
    expect((await sb.run(['echo', 'agent'])).stdoutText).toBe('agent\n');
  });
});
