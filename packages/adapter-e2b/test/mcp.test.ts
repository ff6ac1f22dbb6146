/**
 * Through the E2B adapter on the envd emulator: the stdio MCP "everything"
 * server driven by the MCP client SDK, through stream() with a stdin writer
 * and stderr flowing alongside stdout.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { lines, type Process, type Sandbox } from '@sandstream/types';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';
import { within } from './helpers.js';

const NODE = process.execPath;
let envd: EnvdEmulator;
let native: E2BSdkSandbox;
const open: Sandbox[] = [];
beforeAll(async () => {
  envd = await startEnvdEmulator();
  native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
});
afterAll(async () => {
  await Promise.all(open.map((sb) => sb.close()));
  await envd?.close();
});
async function testSandbox(): Promise<Sandbox> {
  const sb = await createE2BSandbox({ sandbox: native, graceMs: 500 });
  open.push(sb);
  return sb;
}

const require = createRequire(import.meta.url);
const SERVER = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');

/** MCP's stdio transport on top of a Process: newline-delimited JSON-RPC. */
class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly stderr: string[] = [];
  readonly received: JSONRPCMessage[] = [];
  sent = 0;
  private reading: Promise<void> | undefined;

  constructor(private readonly proc: Process) {}

  async start(): Promise<void> {
    this.reading = (async () => {
      try {
        for await (const line of lines(this.proc)) {
          if (line.stream === 'stderr') {
            this.stderr.push(line.text);
            continue;
          }
          if (line.text.trim() === '') continue;
          let message: JSONRPCMessage;
          try {
            message = JSONRPCMessageSchema.parse(JSON.parse(line.text));
          } catch (error) {
            this.onerror?.(error instanceof Error ? error : new Error(String(error)));
            continue;
          }
          this.received.push(message);
          this.onmessage?.(message);
        }
      } catch (error) {
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
      } finally {
        this.onclose?.();
      }
    })();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.sent++;
    await this.proc.stdin!.write(`${JSON.stringify(message)}\n`);
  }

  /** Ends the server's standard input; it exits, and the read loop ends with it. */
  async close(): Promise<void> {
    await this.proc.stdin!.end();
    await this.reading;
  }
}

describe('an MCP client over a Process', () => {
  it('initializes, lists tools, calls echo twice, and the server exits 0 on end-of-input', async () => {
    const sb = await testSandbox();
    await using proc = sb.stream([NODE, SERVER, 'stdio'], { stdin: 'pipe' });
    const transport = new ProcessTransport(proc);
    const errors: Error[] = [];
    transport.onerror = (error) => errors.push(error);
    const client = new Client({ name: 'sandstream-test', version: '1.0.0' });

    await within(20_000, client.connect(transport), 'initialize');
    expect(client.getServerVersion()?.name).toBeTruthy();

    const { tools } = await within(10_000, client.listTools(), 'tools/list');
    expect(tools.map((tool) => tool.name)).toContain('echo');

    const first = await within(10_000, client.callTool({ name: 'echo', arguments: { message: 'hello' } }), 'echo 1');
    expect(first.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);
    const second = await within(10_000, client.callTool({ name: 'echo', arguments: { message: 'wörld ✓' } }), 'echo 2');
    expect(second.content).toEqual([{ type: 'text', text: 'Echo: wörld ✓' }]);

    await within(10_000, client.close(), 'close');
    const result = await within(10_000, proc.wait(), 'server exit');
    expect(result.exitCode).toBe(0);
    expect(result.signal).toBeNull();
    expect(proc.exited).toBe(true);
    // Its stderr flowed alongside without holding anything up.
    expect(transport.stderr.join('')).toMatch(/server/i);
    expect(errors).toEqual([]);
    // Every request got its response: initialize, tools/list and two calls.
    const responses = transport.received.filter((m) => 'id' in m && ('result' in m || 'error' in m));
    expect(responses).toHaveLength(4);
  });

  it('loses no message under many concurrent requests', async () => {
    const sb = await testSandbox();
    await using proc = sb.stream([NODE, SERVER, 'stdio'], { stdin: 'pipe' });
    const transport = new ProcessTransport(proc);
    const client = new Client({ name: 'sandstream-test', version: '1.0.0' });
    await within(20_000, client.connect(transport), 'initialize');

    const messages = Array.from({ length: 100 }, (_, i) => `message ${i} ${'x'.repeat(i * 50)}`);
    const results = await within(
      20_000,
      Promise.all(messages.map((message) => client.callTool({ name: 'echo', arguments: { message } }))),
      '100 concurrent calls',
    );
    expect(results.map((r) => (r.content as Array<{ text: string }>)[0]!.text)).toEqual(
      messages.map((m) => `Echo: ${m}`),
    );

    await client.close();
    expect((await within(10_000, proc.wait(), 'server exit')).exitCode).toBe(0);
  });

  it('is torn down by disposal when the client never closes', async () => {
    const sb = await testSandbox();
    const proc = sb.stream([NODE, SERVER, 'stdio'], { stdin: 'pipe' });
    const transport = new ProcessTransport(proc);
    const client = new Client({ name: 'sandstream-test', version: '1.0.0' });
    await within(20_000, client.connect(transport), 'initialize');
    await within(5_000, proc[Symbol.asyncDispose](), 'disposal');
    expect(proc.exited).toBe(true);
    await client.close().catch(() => undefined);
  });
});
