/**
 * The emulator against the real e2b SDK alone (debug mode, `sandboxUrl`
 * pointing at it), without this package's adapter: the emulator is only
 * useful if the vendor's own client accepts it.
 */
import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CommandExitError, NotFoundError, Sandbox, TimeoutError } from 'e2b';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { emptyHome, isLive, leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
const HOME = emptyHome();
let envd: EnvdEmulator;
let sandbox: Sandbox;

beforeAll(async () => {
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID, HOME } });
  sandbox = await Sandbox.create({ debug: true, sandboxUrl: envd.url });
});

afterEach(async () => {
  // Everything a test started is gone once it ends (the test cleans up what it leaves running).
  await waitFor(() => leftovers(RUN_ID).length === 0, 5_000, `processes left: ${leftovers(RUN_ID).join('; ')}`);
});

afterAll(async () => {
  await envd?.close();
  rmSync(HOME, { recursive: true, force: true });
});

describe('the envd emulator under the e2b SDK', () => {
  it('runs a shell command with output callbacks, then reports the exit code', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const error = await sandbox.commands
      .run('printf "one\\n"; printf "two\\n" >&2; exit 3', { onStdout: (d) => void out.push(d), onStderr: (d) => void err.push(d) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandExitError);
    expect((error as CommandExitError).exitCode).toBe(3);
    expect((error as CommandExitError).stdout).toBe('one\n');
    expect(out.join('')).toBe('one\n');
    expect(err.join('')).toBe('two\n');
    const ok = await sandbox.commands.run('echo fine');
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toBe('fine\n');
    // The SDK sent a login shell, a keepalive interval and its 60 s default timeout.
    const start = envd.requests.filter((r) => r.route === 'Start').at(-1)!;
    expect(start.body).toMatchObject({ process: { cmd: '/bin/bash', args: ['-l', '-c', 'echo fine'] } });
    expect(start.headers['keepalive-ping-interval']).toBe('50');
    expect(start.headers['connect-timeout-ms']).toBe('60000');
  });

  it('runs in the background and kill() ends the leader with "signal: killed", exit -1', async () => {
    const handle = await sandbox.commands.run('sleep 30', { background: true });
    expect(handle.pid).toBeGreaterThan(0);
    expect(await handle.kill()).toBe(true);
    const error = await within(5_000, handle.wait().catch((e: unknown) => e), 'wait after kill');
    expect(error).toBeInstanceOf(CommandExitError);
    expect((error as CommandExitError).exitCode).toBe(-1);
    expect((error as CommandExitError).error).toBe('signal: killed');
    expect(envd.process(handle.pid)?.end).toEqual({ exitCode: -1, exited: false, status: 'signal: killed', error: 'signal: killed' });
  });

  it('signals only the leader: a child of a killed command lives on', async () => {
    const lines: string[] = [];
    const handle = await sandbox.commands.run('sleep 30 & echo $!; wait', { background: true, onStdout: (d) => void lines.push(d) });
    await waitFor(() => lines.join('').includes('\n'), 5_000, 'child pid printed');
    const child = Number(lines.join('').trim());
    await handle.kill();
    await handle.wait().catch(() => undefined);
    expect(isLive(child)).toBe(true);
    process.kill(child, 'SIGKILL');
  });

  it('takes standard input through sendStdin and closeStdin', async () => {
    const handle = await sandbox.commands.run('cat', { background: true, stdin: true });
    await handle.sendStdin('hello ');
    await handle.sendStdin('world');
    await handle.closeStdin();
    const result = await within(5_000, handle.wait(), 'cat after end-of-input');
    expect(result.stdout).toBe('hello world');
    expect(result.exitCode).toBe(0);
  });

  it('without stdin: true, the command reads end-of-file at once', async () => {
    const result = await within(5_000, sandbox.commands.run('cat; echo done'), 'cat without stdin');
    expect(result.stdout).toBe('done\n');
  });

  it('connect() attaches to a running command without replaying its past output', async () => {
    const first: string[] = [];
    const handle = await sandbox.commands.run('echo before; read line; echo "after $line"', {
      background: true,
      stdin: true,
      onStdout: (d) => void first.push(d),
    });
    await waitFor(() => first.join('').includes('before'), 5_000, 'first output');
    const second: string[] = [];
    const attached = await sandbox.commands.connect(handle.pid, { onStdout: (d) => void second.push(d) });
    await sandbox.commands.sendStdin(handle.pid, 'x\n');
    const result = await within(5_000, attached.wait(), 'attached wait');
    expect(result.exitCode).toBe(0);
    expect(second.join('')).toBe('after x\n');
    await handle.wait();
    expect(first.join('')).toBe('before\nafter x\n');
  });

  it('lists running commands; disconnect() does not stop one; unknown pids are NotFound', async () => {
    const handle = await sandbox.commands.run('sleep 30', { background: true });
    const listed = await sandbox.commands.list();
    expect(listed.find((p) => p.pid === handle.pid)).toMatchObject({ cmd: '/bin/bash', args: ['-l', '-c', 'sleep 30'] });
    await handle.disconnect();
    expect((await sandbox.commands.list()).some((p) => p.pid === handle.pid)).toBe(true);
    expect(isLive(handle.pid)).toBe(true);
    expect(await sandbox.commands.kill(handle.pid)).toBe(true);
    await waitFor(() => envd.process(handle.pid)?.end !== undefined, 5_000, 'killed command ended');
    expect(await sandbox.commands.kill(handle.pid)).toBe(false);
    await expect(sandbox.commands.connect(handle.pid)).rejects.toBeInstanceOf(NotFoundError);
    await expect(sandbox.commands.sendStdin(handle.pid, 'x')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('kills the command when the request timeout (Connect-Timeout-Ms) elapses', async () => {
    const error = await within(10_000, sandbox.commands.run('sleep 30', { timeoutMs: 300 }).catch((e: unknown) => e), 'timed-out run');
    expect(error).toBeInstanceOf(TimeoutError);
    const started = envd.processes().at(-1)!;
    await waitFor(() => started.end !== undefined, 5_000, 'the timed-out command ended');
    expect(started.end?.status).toBe('signal: killed');
  });

  it('sends keepalives that the SDK ignores, and answers GET /health', async () => {
    await using quiet = await startEnvdEmulator({ keepaliveMs: 20, env: { [MARKER]: RUN_ID, HOME } });
    const sb = await Sandbox.create({ debug: true, sandboxUrl: quiet.url });
    const result = await sb.commands.run('sleep 0.2; echo done');
    expect(result.stdout).toBe('done\n');
    const response = await fetch(`${quiet.url}/health`);
    expect(response.status).toBe(204);
    expect(quiet.requests.some((r) => r.route === 'health')).toBe(true);
  });

  it('with the fake control plane: create, an access token on every envd request, kill', async () => {
    await using cp = await startEnvdEmulator({ controlPlane: { apiKey: 'k' }, env: { [MARKER]: RUN_ID, HOME } });
    await expect(Sandbox.create({ apiKey: 'wrong', apiUrl: cp.url, sandboxUrl: cp.url })).rejects.toThrow();
    const vm = await Sandbox.create({ apiKey: 'k', apiUrl: cp.url, sandboxUrl: cp.url });
    const issued = cp.sandboxes().find((s) => s.sandboxId === vm.sandboxId)!;
    expect((await vm.commands.run('echo up')).stdout).toBe('up\n');
    const start = cp.requests.filter((r) => r.route === 'Start').at(-1)!;
    expect(start.headers['x-access-token']).toBe(issued.accessToken);
    expect(await vm.isRunning()).toBe(true);
    const handle = await vm.commands.run('sleep 30', { background: true });
    await vm.kill();
    await waitFor(() => cp.process(handle.pid)?.end !== undefined, 5_000, 'the command died with its sandbox');
    expect(await vm.isRunning()).toBe(false);
    await expect(vm.commands.run('true')).rejects.toThrow();
  });

  it('an injected Unavailable reaches the SDK as an error, and nothing was started', async () => {
    envd.inject({ kind: 'error', code: 'unavailable', route: 'Start' });
    const before = envd.processes().length;
    await expect(sandbox.commands.run('echo never')).rejects.toThrow();
    expect(envd.processes().length).toBe(before);
  });
});
