// The stdio MCP session every adapter's tests run: the MCP "everything"
// server driven by the MCP client SDK over a Process, with a stdin writer,
// stderr flowing alongside stdout, and another task awaiting wait() the
// whole time the loop reads (SS-WAIT-3). One copy, so the three adapters are
// held to the same session.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { lines, type Process, type Sandbox } from '@sandstream/types';
import { within } from './timing.js';

const require = createRequire(import.meta.url);
const SERVER = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');
const NODE = process.execPath;

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** MCP's stdio transport on top of a Process: newline-delimited JSON-RPC. */
export class ProcessTransport implements Transport {
  /** The server's standard error, line by line. */
  readonly stderr: string[] = [];
  /** Every message received, in order. */
  readonly received: JSONRPCMessage[] = [];
  /** How many messages were sent. */
  sent = 0;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  #reading: Promise<void> | undefined;
  #markStarted!: () => void;
  /** Resolves once the read loop is iterating. */
  readonly started = new Promise<void>((resolve) => (this.#markStarted = resolve));

  constructor(readonly proc: Process) {}

  async start(): Promise<void> {
    this.#reading = (async () => {
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
            this.onerror?.(asError(error));
            continue;
          }
          this.received.push(message);
          this.onmessage?.(message);
        }
      } catch (error) {
        this.onerror?.(asError(error));
      } finally {
        this.onclose?.();
      }
    })();
    this.#markStarted();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.sent++;
    await this.proc.stdin!.write(`${JSON.stringify(message)}\n`);
  }

  /** Ends the server's standard input; it exits, and the read loop ends with it. */
  async close(): Promise<void> {
    await this.proc.stdin!.end();
    await this.#reading;
  }
}

/**
 * Defines the stdio MCP session tests (initialize, tools, echo while wait()
 * is pending, 100 concurrent calls, teardown by disposal) against sandboxes
 * from `openSandbox`, which must have the `stdin` capability.
 */
export function describeMcpSession(openSandbox: () => Sandbox | Promise<Sandbox>): void {
  describe('an MCP client over a Process', () => {
    it('initializes, lists tools, calls echo twice while wait() is pending, and the server exits 0 on end-of-input', async () => {
      const sb = await openSandbox();
      expect(sb.capabilities.stdin).toBe(true);
      const proc = sb.stream([NODE, SERVER, 'stdio'], { stdin: 'pipe' });
      try {
        const transport = new ProcessTransport(proc);
        const errors: Error[] = [];
        transport.onerror = (error) => errors.push(error);
        const client = new Client({ name: 'sandstream-test', version: '1.0.0' });

        const connecting = client.connect(transport);
        await transport.started;
        // Another task awaits the end the whole time the loop reads: the reader still gets every message.
        const waiting = proc.wait();
        await within(20_000, connecting, 'initialize');
        expect(client.getServerVersion()?.name).toBeTruthy();

        const { tools } = await within(10_000, client.listTools(), 'tools/list');
        expect(tools.map((tool) => tool.name)).toContain('echo');
        const first = await within(10_000, client.callTool({ name: 'echo', arguments: { message: 'hello' } }), 'echo 1');
        expect(first.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);
        const second = await within(10_000, client.callTool({ name: 'echo', arguments: { message: 'wörld ✓' } }), 'echo 2');
        expect(second.content).toEqual([{ type: 'text', text: 'Echo: wörld ✓' }]);

        await within(10_000, client.close(), 'close');
        const result = await within(10_000, waiting, 'server exit');
        expect(result.exitCode).toBe(0);
        expect(result.signal).toBeNull();
        expect(proc.exited).toBe(true);
        // Its stderr flowed alongside without holding anything up.
        expect(transport.stderr.join('')).toMatch(/server/i);
        expect(errors).toEqual([]);
        // Every request got its response: initialize, tools/list and two calls.
        const responses = transport.received.filter((m) => 'id' in m && ('result' in m || 'error' in m));
        expect(responses).toHaveLength(4);
      } finally {
        await proc[Symbol.asyncDispose]();
      }
    });

    it('loses no message under many concurrent requests', async () => {
      const sb = await openSandbox();
      const proc = sb.stream([NODE, SERVER, 'stdio'], { stdin: 'pipe' });
      try {
        const client = new Client({ name: 'sandstream-test', version: '1.0.0' });
        await within(20_000, client.connect(new ProcessTransport(proc)), 'initialize');
        const messages = Array.from({ length: 100 }, (_, i) => `message ${i} ${'x'.repeat(i * 50)}`);
        const results = await within(
          20_000,
          Promise.all(messages.map((message) => client.callTool({ name: 'echo', arguments: { message } }))),
          '100 concurrent calls',
        );
        expect(results.map((r) => (r.content as Array<{ text?: string }>)[0]?.text)).toEqual(messages.map((m) => `Echo: ${m}`));
        await client.close();
        expect((await within(10_000, proc.wait(), 'server exit')).exitCode).toBe(0);
      } finally {
        await proc[Symbol.asyncDispose]();
      }
    });

    it('is torn down by disposal when the client never closes', async () => {
      const sb = await openSandbox();
      const proc = sb.stream([NODE, SERVER, 'stdio'], { stdin: 'pipe' });
      const client = new Client({ name: 'sandstream-test', version: '1.0.0' });
      await within(20_000, client.connect(new ProcessTransport(proc)), 'initialize');
      await within(5_000, proc[Symbol.asyncDispose](), 'disposal');
      expect(proc.exited).toBe(true);
      await client.close().catch(() => undefined);
    });
  });
}
