// The tools as a model meets them: names with a prefix, titles and descriptions that state the
// sandbox's facts (isolation, network, writable paths, no state between calls, time limits),
// nothing of the protocol, and --help listing every tool.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { CLI, connect, outcome } from './harness.js';
import { isolation } from './isolation.js';

async function toolsOf(args: readonly string[], env?: Record<string, string>) {
  const session = await connect(args, env);
  try {
    return (await session.client.listTools()).tools;
  } finally {
    await session.client.close();
  }
}

describe('names, titles and descriptions', () => {
  it('plain local: says it is not isolated, with the host network; exec says cd does not carry over, the limits, and start for servers; shell says what carries over and what is not saved', async () => {
    const tools = await toolsOf(['--adapter', 'local']);
    const exec = tools[0]!;
    expect(exec.title).toBe('Run a command (local, not isolated)');
    expect(exec.description).toMatch(/Sandbox: NONE\. Commands run directly on the host/);
    expect(exec.description).toContain("host's network");
    expect(exec.description).toMatch(/`cd`, exported variables.*do NOT carry over/);
    expect(exec.description).toContain('Time limit: 50 s by default, up to 600 s');
    expect(exec.description).toContain('use sandbox_start and sandbox_read');
    expect(exec.description).toContain('or use sandbox_shell, where cd and export carry over');
    const shell = tools.find((tool) => tool.name === 'sandbox_shell')!;
    expect(shell.title).toBe('Run shell commands in a session shell (local, not isolated)');
    expect(shell.description).toMatch(/working directory and exported variables carry over from one call of this tool to the next in this session/);
    expect(shell.description).toMatch(/NOT saved when the call is timed out or cancelled/);
    expect(shell.description).toContain('reset: true');
    expect(shell.description).toContain('Time limit: 50 s by default, up to 600 s');
    expect(shell.description).toMatch(/Sandbox: NONE\./);
    expect(Object.keys(shell.inputSchema.properties!)).toEqual(['command', 'timeout', 'stdin', 'reset']);
    expect(tools.find((tool) => tool.name === 'sandbox_list')!.title).toBe('List the background commands (local, not isolated)');
    for (const tool of tools) {
      expect(tool.description, tool.name).not.toMatch(/progress|_meta|token/i);
      expect(JSON.stringify(tool.inputSchema), tool.name).not.toMatch(/progress|_meta/i);
    }
  });

  unless(it, isolation)('namespaces: the titles do not say "(local)"; the descriptions name the writable paths and loopback only', async () => {
    const tools = await toolsOf(['--adapter', 'local', '--isolation', 'namespaces']);
    for (const tool of tools) expect(tool.title, tool.name).not.toContain('(local');
    expect(tools[0]!.title).toBe('Run a command (isolated: Linux namespaces)');
    expect(tools[0]!.description).toContain('Writable: /workspace, /tmp');
    expect(tools[0]!.description).toContain('no network: loopback (127.0.0.1) only');
    // The isolated mode makes its terminals inside the sandbox: resize is offered there too.
    expect(tools.map((tool) => tool.name)).toContain('sandbox_resize');
  });

  it('--tool-prefix and SANDSTREAM_MCP_TOOL_PREFIX name the tools, and calls go by those names', async () => {
    expect((await toolsOf(['--adapter', 'local', '--tool-prefix', 'box_'])).map((tool) => tool.name)).toEqual(['box_exec', 'box_shell', 'box_start', 'box_read', 'box_write', 'box_kill', 'box_list', 'box_resize']);
    const session = await connect(['--adapter', 'local'], { SANDSTREAM_MCP_TOOL_PREFIX: '' });
    try {
      expect((await session.client.listTools()).tools.map((tool) => tool.name)).toEqual(['exec', 'shell', 'start', 'read', 'write', 'kill', 'list', 'resize']);
      expect(outcome((await session.client.callTool({ name: 'exec', arguments: { command: 'echo ok' } })) as never).stdout).toBe('ok\n');
      expect((await session.client.listTools()).tools[0]!.description).toContain('use start and read');
    } finally {
      await session.client.close();
    }
  });

  it('--help lists every tool and the new options', () => {
    const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    for (const tool of ['sandbox_exec', 'sandbox_shell', 'sandbox_start', 'sandbox_read', 'sandbox_write', 'sandbox_kill', 'sandbox_list', 'sandbox_resize']) expect(help.stdout).toContain(tool);
    for (const option of ['--tool-prefix', '--output-budget', '--timeout', '--max-timeout', '--max-unread-bytes']) expect(help.stdout).toContain(option);
  });
});
