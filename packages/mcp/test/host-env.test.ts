// The server's own environment stays out of the sandbox unless `--env` names
// a variable: a secret planted in the server process's environment (as an
// MCP client passes the user's API keys to the servers it starts), looked
// for in what the exec tool's `env` prints, through the SDK's client.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startEnvdEmulator } from '@sandstream/adapter-e2b/emulator';
import { unless } from '@sandstream/test-support/skips';
import { applyEnvNames } from '../src/cli-env.js';
import { connect, outcome } from './harness.js';
import { isolation } from './isolation.js';

const NAME = 'SANDSTREAM_TEST_SECRET';
const secret = `sk-${randomBytes(16).toString('hex')}`;
const OTHER = 'SANDSTREAM_TEST_OTHER';
const planted = { [NAME]: secret, [OTHER]: 'other' };


/** What `env` prints in the sandbox of a server started with `args` and the secret in its environment; and the server's stderr. */
async function sandboxEnv(args: readonly string[]): Promise<{ env: string; stderr: string }> {
  const session = await connect(args, planted);
  try {
    const ran = outcome((await session.client.callTool({ name: 'sandbox_exec', arguments: { argv: ['env'] } })) as never);
    expect(ran.exitCode).toBe(0);
    // The command ran and printed an environment: an empty output would pass the checks below for the wrong reason.
    expect(ran.stdout).toMatch(/^PATH=/m);
    return { env: ran.stdout, stderr: session.stderr.join('') };
  } finally {
    await session.client.close();
  }
}

const modes: [string, string[], string | undefined][] = [
  ['plain', ['--adapter', 'local'], undefined],
  ['--isolation namespaces', ['--adapter', 'local', '--isolation', 'namespaces'], isolation],
];

describe("the server's environment and the sandbox", () => {
  for (const [mode, args, skip] of modes) {
    unless(it, skip)(`${mode}: a secret in the server's environment is not in a command's environment`, async () => {
      const { env } = await sandboxEnv(args);
      expect(env).not.toContain(secret);
      expect(env).not.toMatch(new RegExp(`^${NAME}=`, 'm'));
    });

    unless(it, skip)(`${mode}: --env ${NAME} passes it, and only it`, async () => {
      const { env } = await sandboxEnv([...args, '--env', NAME]);
      expect(env).toMatch(new RegExp(`^${NAME}=${secret}$`, 'm'));
      expect(env).not.toMatch(new RegExp(`^${OTHER}=`, 'm'));
    });
  }

  it('--env naming a variable the server lacks starts anyway, and says so on standard error', async () => {
    const { env, stderr } = await sandboxEnv(['--adapter', 'local', '--env', 'SANDSTREAM_TEST_NOT_SET']);
    expect(env).not.toContain('SANDSTREAM_TEST_NOT_SET');
    expect(stderr).toContain('--env SANDSTREAM_TEST_NOT_SET');
  });

  it('--adapter e2b (on the envd emulator): --env adds the named variable to every command, and nothing of the server goes in without it', async () => {
    const envd = await startEnvdEmulator({ controlPlane: { apiKey: 'e2b_test_key' } });
    try {
      const connection = { apiKey: 'e2b_test_key', apiUrl: envd.url, sandboxUrl: envd.url };
      const args = ['--adapter', 'e2b', '--options', JSON.stringify({ connection, env: { GIVEN: 'by-options' } })];
      const without = await sandboxEnv(args);
      expect(without.env).not.toContain(secret);
      expect(without.env).toMatch(/^GIVEN=by-options$/m);
      const named = await sandboxEnv([...args, '--env', NAME]);
      expect(named.env).toMatch(new RegExp(`^${NAME}=${secret}$`, 'm'));
      expect(named.env).toMatch(/^GIVEN=by-options$/m);
    } finally {
      await envd.close();
    }
  }, 120_000);
});

describe('applyEnvNames: the factory options --env makes', () => {
  const host = { A: 'a', B: 'b' };

  it('local: hostEnv always, after a hostEnv of --options; an env of --options untouched', () => {
    expect(applyEnvNames('local', {}, [], host)).toEqual({ hostEnv: [] });
    expect(applyEnvNames('local', { isolation: 'namespaces' }, ['A'], host)).toEqual({ isolation: 'namespaces', hostEnv: ['A'] });
    expect(applyEnvNames('local', { hostEnv: ['B'], env: { X: '1' } }, ['A'], host)).toEqual({ hostEnv: ['B', 'A'], env: { X: '1' } });
    // Not an array: passed on for adapter-local to reject with its own message.
    expect(applyEnvNames('local', { hostEnv: 'B' }, ['A'], host)).toEqual({ hostEnv: 'B' });
  });

  it('e2b, vercel, docker: the values over an env of --options; a variable the host lacks left out and warned about', () => {
    const warnings: string[] = [];
    for (const adapter of ['e2b', 'vercel', 'docker']) {
      expect(applyEnvNames(adapter, { env: { A: 'given', X: '1' } }, ['A', 'C'], host, (m) => warnings.push(m))).toEqual({ env: { A: 'a', X: '1' } });
      expect(applyEnvNames(adapter, { image: 'i' }, [], host)).toEqual({ image: 'i' });
    }
    expect(warnings).toEqual(Array.from({ length: 3 }, () => expect.stringContaining('--env C')));
    expect(() => applyEnvNames('docker', { env: 'A=1' }, ['A'], host)).toThrow(/--options env must be an object/);
  });

  it('a module path: --env is refused, and without it the options are untouched', () => {
    expect(() => applyEnvNames('./adapter.js', {}, ['A'], host)).toThrow(/--env applies to the built-in adapters/);
    expect(applyEnvNames('./adapter.js', { marker: 1 }, [], host)).toEqual({ marker: 1 });
  });
});
