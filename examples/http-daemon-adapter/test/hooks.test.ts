import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

/**
 * The module as the kit's CLI uses it, in a process of its own: setup,
 * one command, teardown. The process must stay alive until teardown has
 * stopped the daemon (nothing else holds its event loop), and the daemon
 * must be gone afterwards.
 */
const built = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const script = `
const adapter = await import(${JSON.stringify(built)});
await adapter.conformanceHooks.setup();
const sandbox = await adapter.default();
const result = await sandbox.run(['sh', '-c', 'echo hello']);
await sandbox.close();
await adapter.conformanceHooks.teardown();
console.log(JSON.stringify({ url: sandbox.native.url, stdout: result.stdoutText }));
`;

function refused(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = request(url, { method: 'DELETE' }, (response) => {
      response.resume();
      resolve(false);
    });
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
    probe.end();
  });
}

function runNode(source: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', source], { timeout: 20_000 }, (error, out, err) => {
      if (error) reject(new Error(`${error.message}\n${err}`));
      else resolve(out);
    });
  });
}

test('without the hooks, the factory starts the daemon, and the daemon ends with the process', async () => {
  const lazy = `
const adapter = await import(${JSON.stringify(built)});
const sandbox = await adapter.default();
const result = await sandbox.run(['sh', '-c', 'echo hello']);
await sandbox.close();
console.log(JSON.stringify({ url: sandbox.native.url, stdout: result.stdoutText }));
`;
  const report = JSON.parse((await runNode(lazy)).trim().split('\n').at(-1) ?? 'null') as { url: string; stdout: string };
  expect(report.stdout).toBe('hello\n');
  // The process has exited; its daemon notices its standard input closing and stops.
  await expect.poll(() => refused(report.url), { timeout: 10_000, interval: 50 }).toBe(true);
});

test('setup, a command and teardown in a process of their own; the daemon is gone afterwards', async () => {
  const stdout = await runNode(script);
  // Without the last line the process ended before teardown finished.
  const report = JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null') as { url: string; stdout: string };
  expect(report.stdout).toBe('hello\n');
  expect(await refused(report.url)).toBe(true);
});
