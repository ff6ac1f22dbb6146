/**
 * Who owns the E2B sandbox decides what close() does, through the SDK's
 * non-debug path against the emulator's fake control plane: a sandbox the
 * adapter created is killed; a borrowed one keeps running with everything
 * the adapter did not start.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';
import { emptyHome, leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
const API_KEY = 'e2b_test_key';
const HOME = emptyHome();
let envd: EnvdEmulator;

beforeAll(async () => {
  envd = await startEnvdEmulator({ controlPlane: { apiKey: API_KEY }, env: { [MARKER]: RUN_ID, HOME } });
});

afterAll(async () => {
  await envd?.close();
  rmSync(HOME, { recursive: true, force: true });
  expect(leftovers(RUN_ID)).toEqual([]);
});

const connection = (): { apiKey: string; apiUrl: string; sandboxUrl: string } => ({ apiKey: API_KEY, apiUrl: envd.url, sandboxUrl: envd.url });

describe('close() and who owns the sandbox', () => {
  it('a sandbox the adapter created is killed by close(), with what runs in it', async () => {
    const sb = await createE2BSandbox({ connection: connection() });
    const id = sb.native.sandboxId;
    expect(envd.sandboxes().find((s) => s.sandboxId === id)?.killedAt).toBeUndefined();
    expect((await sb.run(['echo', 'hello'])).stdoutText).toBe('hello\n');
    // envd's access token, issued by the control plane, went with every process request.
    const token = envd.sandboxes().find((s) => s.sandboxId === id)!.accessToken;
    const rpcs = envd.requests.filter((r) => (r.path.startsWith('/process.Process/')));
    expect(rpcs.length).toBeGreaterThan(0);
    expect(rpcs.every((r) => r.headers['x-access-token'] === token && r.headers['e2b-sandbox-id'] === id)).toBe(true);

    const proc = sb.stream(['sh', '-c', 'sleep 60 & sleep 60']);
    await within(10_000, proc.started(), 'start');
    const pgid = Number(proc.commandId);
    await within(15_000, sb.close(), 'close()');
    expect(envd.requests.some((r) => r.route === 'kill-sandbox' && r.path === `/sandboxes/${id}`)).toBe(true);
    expect(envd.sandboxes().find((s) => s.sandboxId === id)?.killedAt).toBeDefined();
    expect(envd.groupMembers(pgid)).toEqual([]);
    // A dead sandbox answers like one.
    await expect(sb.native.commands.run('true')).rejects.toThrow();
  });

  it('a borrowed sandbox survives close(): only the adapter\'s own commands end', async () => {
    const vm = await E2BSdkSandbox.create(connection());
    const sb = await createE2BSandbox({ sandbox: vm });
    const theirs = await vm.commands.run('sleep 60', { background: true });
    const ours = sb.stream(['sh', '-c', 'sleep 60 & sleep 60']);
    await within(10_000, ours.started(), 'start');
    const pgid = Number(ours.commandId);
    await within(15_000, sb.close(), 'close()');
    expect(envd.groupMembers(pgid)).toEqual([]);
    expect(envd.requests.some((r) => r.route === 'kill-sandbox' && r.path === `/sandboxes/${vm.sandboxId}`)).toBe(false);
    expect((await vm.commands.list()).some((p) => p.pid === theirs.pid)).toBe(true);
    await vm.kill();
    await waitFor(() => envd.process(theirs.pid)?.end !== undefined, 5_000, 'the killed sandbox took its command along');
  });
});
