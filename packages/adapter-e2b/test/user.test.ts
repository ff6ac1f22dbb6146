/**
 * Commands as another account, through envd's Basic-auth account. The
 * emulator can switch accounts only when it runs as root.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { SpawnFailed, type Sandbox } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';
import { within } from './helpers.js';

const ROOT = process.getuid?.() === 0;
let envd: EnvdEmulator;
let sb: Sandbox;

beforeAll(async () => {
  envd = await startEnvdEmulator();
  sb = await createE2BSandbox({ sandbox: await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url }) });
});

afterAll(async () => {
  await sb?.close();
  await envd?.close();
});

describe('the user option', () => {
  it('an account the sandbox does not have is SpawnFailed, and nothing starts', async () => {
    const before = envd.processes().length;
    const error = await sb.run(['true'], { user: 'no-such-account' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpawnFailed);
    expect((error as Error).message).toMatch(/no such account "no-such-account"/);
    expect(envd.processes().length).toBe(before);
  });

  unless(it, ROOT ? undefined : 'the emulator runs commands as another account only when it runs as root')('runs as the account, with its identity on every request, and signals reach it', async () => {
    const result = await sb.run(['sh', '-c', 'id -u; echo "$USER"; pwd'], { user: 'nobody' });
    const [uid, user, cwd] = result.stdoutText.trim().split('\n');
    expect(Number(uid)).toBeGreaterThan(0);
    expect(user).toBe('nobody');
    // nobody's home does not exist: the command starts in /.
    expect(cwd).toBe('/');
    const proc = sb.stream(['sleep', '30'], { user: 'nobody' });
    await within(10_000, proc.started(), 'start');
    await proc.kill('SIGTERM');
    expect((await within(10_000, proc.wait(), 'wait')).signal).toBe('SIGTERM');
    // The supervisor ran as nobody, and the SIGTERM (one SendSignal to it) named nobody too.
    const ours = envd.processes().filter((p) => p.user === 'nobody');
    expect(ours.some((p) => p.config.args[2] === 'sandstream-supervisor')).toBe(true);
    const signal = envd.requests.filter((r) => r.route === 'SendSignal').at(-1);
    expect(signal?.headers['authorization']).toBe(`Basic ${Buffer.from('nobody:').toString('base64')}`);
  });
});
