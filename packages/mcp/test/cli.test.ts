import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { AdapterLoadError } from '../src/index.js';
import { importPackageFactory } from '../src/adapter.js';
import { CLI, connect, failureOf, outcome } from './harness.js';
import { isolation } from './isolation.js';

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Runs the CLI to its exit with stdin closed: what a failed start prints. */
function runCli(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stderr }));
  });
}


async function execIn(args: readonly string[], command: string): Promise<string> {
  const session = await connect(args);
  try {
    return outcome((await session.client.callTool({ name: 'sandbox_exec', arguments: { command } })) as never).stdout;
  } finally {
    await session.client.close();
  }
}

describe('sandstream-mcp --adapter', () => {
  it('loads a module path and calls its createSandbox with --options', async () => {
    expect(await execIn(['--adapter', fixture('marked-adapter.js'), '--options', '{"marker":"m-1"}'], 'echo "$SANDSTREAM_MCP_MARKER"')).toBe('m-1\n');
  });

  it('passes --options to the factory: a sandbox without the stdin capability makes a call with stdin CAPABILITY_NOT_SUPPORTED', async () => {
    const session = await connect(['--adapter', fixture('marked-adapter.js'), '--options', '{"capabilities":{"stdin":false}}']);
    try {
      const failed = failureOf((await session.client.callTool({ name: 'sandbox_exec', arguments: { argv: ['cat'], stdin: 'x' } })) as never);
      expect(failed.code).toBe('CAPABILITY_NOT_SUPPORTED');
    } finally {
      await session.client.close();
    }
  });

  it('a built-in adapter whose package is not installed is ADAPTER_NOT_INSTALLED, naming the package to install', async () => {
    const attempt = importPackageFactory('e2b', '@sandstream/adapter-not-installed', 'createSandbox');
    await expect(attempt).rejects.toBeInstanceOf(AdapterLoadError);
    await expect(attempt).rejects.toMatchObject({ code: 'ADAPTER_NOT_INSTALLED', message: expect.stringContaining('npm install @sandstream/adapter-not-installed') });
  });

  it("loads a module path whose default export is the factory (the conformance kit's convention)", async () => {
    expect(await execIn(['--adapter', fixture('default-adapter.js')], 'echo ok')).toBe('ok\n');
  });

  unless(it, isolation)('--adapter local --isolation namespaces runs commands in the isolated environment', async () => {
    expect(await execIn(['--adapter', 'local', '--isolation', 'namespaces'], 'pwd')).toBe('/workspace\n');
  });

  const failures: [string, string[], RegExp][] = [
    ['no --adapter', [], /--adapter is required/],
    ['a path that does not exist', ['--adapter', './no-such-adapter.js'], /neither a built-in adapter .* nor a file/],
    ['a module that gives no factory', ['--adapter', fixture('not-an-adapter.js')], /exports neither createSandbox nor a default factory/],
    ['--isolation with another adapter', ['--adapter', fixture('default-adapter.js'), '--isolation', 'namespaces'], /--isolation applies to --adapter local only/],
    ['--options that are not JSON', ['--adapter', 'local', '--options', '{'], /--options is not valid JSON/],
    ['an unknown option', ['--adapter', 'local', '--shell'], /Unknown option '--shell'/],
    ['--env with an assignment', ['--adapter', 'local', '--env', 'TOKEN=x'], /--env takes a variable name .* got "TOKEN=x"/],
    ['--env with an empty name', ['--adapter', 'local', '--env', ''], /--env takes a variable name/],
    ['--env with a module path', ['--adapter', fixture('default-adapter.js'), '--env', 'PATH'], /--env applies to the built-in adapters/],
    ['an output budget under the least', ['--adapter', 'local', '--output-budget', '100'], /--output-budget .* at least 2000/],
    ['a tool prefix with a dot', ['--adapter', 'local', '--tool-prefix', 'a.b'], /--tool-prefix/],
    ['a maximum timeout under the default', ['--adapter', 'local', '--timeout', '5000', '--max-timeout', '1000'], /--max-timeout is below the default timeout/],
  ];
  for (const [what, args, message] of failures) {
    it(`exits 2 with the reason on ${what}`, async () => {
      const { code, stderr } = await runCli(args);
      expect(code).toBe(2);
      expect(stderr).toMatch(message);
    });
  }
});
