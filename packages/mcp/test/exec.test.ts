import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { within } from '@sandstream/test-support/timing';
import { DEFAULT_OUTPUT_BUDGET } from '../src/index.js';
import { connect, execWithProgress, failureOf, lineWaiter, outcome, type Session } from './harness.js';

let session: Session;
let dir: string;
beforeAll(async () => {
  session = await connect();
  dir = mkdtempSync(join(tmpdir(), 'sandstream-mcp-'));
});
afterAll(async () => {
  await session?.client.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('exec over stdio, with the MCP SDK client', () => {
  it('lists sandbox_exec, with an input schema that rejects unknown keys and an output schema, then the background tools (resize: the local sandbox has pty), each closed to unknown keys', async () => {
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['sandbox_exec', 'sandbox_shell', 'sandbox_start', 'sandbox_read', 'sandbox_write', 'sandbox_kill', 'sandbox_list', 'sandbox_resize']);
    expect(tools[0]!.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
    expect(tools[0]!.outputSchema).toMatchObject({ type: 'object' });
    for (const tool of tools) expect(tool.inputSchema, tool.name).toMatchObject({ type: 'object', additionalProperties: false });
  });

  it('sends a line as progress before the command exits: the command waits for a file the test creates only on that progress', async () => {
    const gate = join(dir, 'gate');
    const { onLine, seen } = lineWaiter((line) => line.text === 'ready\n');
    const call = execWithProgress(
      session.client,
      // The command cannot end before the gate exists; the timeout turns a progress that never came into a failed assertion instead of a hang.
      { command: `echo ready; while [ ! -e '${gate}' ]; do sleep 0.01; done; echo done`, timeout: 20_000 },
      onLine,
    );
    await seen;
    expect(existsSync(gate)).toBe(false);
    writeFileSync(gate, '');
    const { result, lines } = await call;
    expect(outcome(result)).toMatchObject({ exitCode: 0, timedOut: false, stdout: 'ready\ndone\n' });
    expect(lines.map((l) => l.text)).toEqual(['ready\n', 'done\n']);
  });

  it('notifies every line of both streams once, in order, and they add up to the result (a final line without a newline included)', async () => {
    // Both streams within the default output budget, so the result has all of them.
    const n = 1000;
    const command = `i=0; while [ $i -lt ${n} ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done; printf 'out tail'; printf 'err tail' >&2`;
    const { result, lines } = await execWithProgress(session.client, { command });
    const out = outcome(result);
    expect(out.exitCode).toBe(0);
    const stdout = lines.filter((l) => l.stream === 'stdout');
    const stderr = lines.filter((l) => l.stream === 'stderr');
    expect(stdout.length).toBe(n + 1);
    expect(stderr.length).toBe(n + 1);
    expect(lines.length).toBe(2 * n + 2);
    expect(out.truncated).toBe(false);
    expect(stdout.map((l) => l.text).join('')).toBe(out.stdout);
    expect(stderr.map((l) => l.text).join('')).toBe(out.stderr);
    expect(stdout.at(-1)!.text).toBe('out tail');
    expect(stdout.slice(0, n).map((l) => l.text)).toEqual(Array.from({ length: n }, (_, i) => `out ${i}\n`));
    expect(stderr.slice(0, n).map((l) => l.text)).toEqual(Array.from({ length: n }, (_, i) => `err ${i}\n`));
    // The progress counter is the arrival order: 1, 2, 3, ... with no gap or repeat.
    expect(lines.map((l) => l.progress)).toEqual(Array.from({ length: lines.length }, (_, i) => i + 1));
  });

  it('sends no progress when the request carries no progress token, and still returns the output', async () => {
    const result = await session.client.callTool({ name: 'sandbox_exec', arguments: { argv: ['printf', 'a\\nb\\n'] } });
    expect(outcome(result as never)).toMatchObject({ exitCode: 0, stdout: 'a\nb\n', stderr: '', truncated: false });
    expect((result.content as { text: string }[])[0]!.text).toContain('exit code 0');
  });

  it('passes cwd, env and stdin, and reports the exit code', async () => {
    const result = await session.client.callTool({
      name: 'sandbox_exec',
      arguments: { command: 'pwd; echo "$GREETING"; cat; exit 3', cwd: dir, env: ['GREETING=hello'], stdin: 'from stdin\n' },
    });
    expect(outcome(result as never)).toMatchObject({ exitCode: 3, signal: null, stdout: `${dir}\nhello\nfrom stdin\n` });
  });

  it('ends a command at its timeout and flags it, keeping what it wrote before (in the result and as progress)', async () => {
    const { result, lines } = await execWithProgress(session.client, { command: 'echo before; exec sleep 30', timeout: 1000 });
    const out = outcome(result);
    expect(out).toMatchObject({ timedOut: true, exitCode: null, stdout: 'before\n' });
    expect(out.signal).not.toBeNull();
    expect(lines.map((l) => l.text)).toEqual(['before\n']);
  });

  it('seq 1 300000: a result within the default budget, with the first line, the last line and the cut marker, and the status on top', async () => {
    const result = (await session.client.callTool({ name: 'sandbox_exec', arguments: { command: 'seq 1 300000' } })) as CallToolResult;
    const out = outcome(result);
    expect(result.content).toHaveLength(1);
    expect(out.text.length).toBeLessThanOrEqual(DEFAULT_OUTPUT_BUDGET);
    expect(out.text.split('\n')[0]).toMatch(/^exit code 0; output TRUNCATED .*; \d+ ms$/);
    const lines = out.stdout.split('\n');
    expect(lines[0]).toBe('1');
    expect(lines.at(-2)).toBe('300000');
    const marker = lines.find((line) => line.startsWith('[... '))!;
    expect(marker).toMatch(/^\[\.\.\. [\d,]+ lines \([\d,]+ bytes\) of stdout left out here\. .*redirected to a file.* \.\.\.\]$/);
    // Whole lines on either side of the marker, in order, and the counts add up to the output.
    const kept = lines.filter((line) => line !== '' && line !== marker).map(Number);
    const gap = kept.findIndex((n, i) => i > 0 && n !== kept[i - 1]! + 1);
    expect(kept.slice(0, gap)).toEqual(Array.from({ length: gap }, (_, i) => i + 1));
    expect(kept.slice(gap)).toEqual(Array.from({ length: kept.length - gap }, (_, i) => 300000 - (kept.length - gap) + 1 + i));
    expect(out.omitted.stdout.lines).toBe(300000 - kept.length);
    expect(out).toMatchObject({ exitCode: 0, truncated: true, timedOut: false, omitted: { stderr: { bytes: 0, lines: 0 } } });
    // The output is in the text only: structuredContent has the status.
    expect(Object.keys(result.structuredContent!).sort()).toEqual(['durationMs', 'exitCode', 'omitted', 'signal', 'timedOut', 'timeoutMs', 'truncated']);
    expect(out.text).not.toContain('seq 1 300000');
  });

  it('cuts each stream to its share of the budget, and still notifies every line past the cut', async () => {
    const { result, lines } = await execWithProgress(session.client, { command: 'seq 1 20000; seq 1 20000 >&2' });
    const out = outcome(result);
    expect(out.text.length).toBeLessThanOrEqual(DEFAULT_OUTPUT_BUDGET);
    expect(out.stdout.startsWith('1\n2\n')).toBe(true);
    expect(out.stderr.endsWith('19999\n20000\n')).toBe(true);
    expect(out.omitted.stdout.lines).toBeGreaterThan(0);
    expect(out.omitted.stderr.lines).toBeGreaterThan(0);
    expect(lines.length).toBe(40000);
  });

  it('a strict-mode call (every argument present, null where unused) runs, and the status line comes first', async () => {
    const args = { argv: null, command: 'echo out; echo err >&2; exit 4', cwd: null, env: null, timeout: null, stdin: null, pty: null, raw: null };
    const out = outcome((await session.client.callTool({ name: 'sandbox_exec', arguments: args })) as CallToolResult);
    expect(out.text).toMatch(/^exit code 4; \d+ ms\n<stdout>\nout\n<\/stdout>\n<stderr>\nerr\n<\/stderr>$/);
    expect(out).toMatchObject({ exitCode: 4, stdout: 'out\n', stderr: 'err\n', timeoutMs: 50_000 });
  });

  it('runs concurrent calls independently: each gets its own output and only its own progress', async () => {
    const calls = Array.from({ length: 12 }, (_, i) =>
      execWithProgress(session.client, { command: `for j in 1 2 3 4 5; do echo "call ${i} line $j"; done` }),
    );
    const done = await within(30_000, Promise.all(calls), 'twelve concurrent calls');
    done.forEach(({ result, lines }, i) => {
      const expected = [1, 2, 3, 4, 5].map((j) => `call ${i} line ${j}\n`);
      expect(outcome(result).stdout).toBe(expected.join(''));
      expect(lines.map((l) => l.text)).toEqual(expected);
    });
  });

  describe('bad input is a tool error with the spec code, and the server keeps serving', () => {
    const cases: [string, Record<string, unknown>, string, string | undefined][] = [
      ['a string where argv belongs', { argv: 'ls -l' }, 'INVALID_ARGUMENT', 'arguments.argv'],
      ['an unknown key', { argv: ['true'], shell: true }, 'INVALID_ARGUMENT', 'arguments.shell'],
      ['neither argv nor command', { cwd: '/' }, 'INVALID_ARGUMENT', 'arguments'],
      ['both argv and command', { argv: ['true'], command: 'true' }, 'INVALID_ARGUMENT', 'arguments'],
      ['a negative timeout', { argv: ['true'], timeout: -1 }, 'INVALID_ARGUMENT', 'arguments.timeout'],
      ['a timeout over the maximum', { argv: ['true'], timeout: 600_001 }, 'INVALID_ARGUMENT', 'arguments.timeout'],
      ['an env entry that is not NAME=value', { argv: ['true'], env: ['JUST_A_NAME'] }, 'INVALID_ARGUMENT', 'arguments.env.0'],
      ['env as an object', { argv: ['true'], env: { A: '1' } }, 'INVALID_ARGUMENT', 'arguments.env'],
      ['the removed maxOutputBytes', { argv: ['true'], maxOutputBytes: 10 }, 'INVALID_ARGUMENT', 'arguments.maxOutputBytes'],
      ['a missing binary', { argv: ['/no/such/binary-sandstream'] }, 'SPAWN_FAILED', undefined],
      ['a working directory that does not exist', { argv: ['true'], cwd: '/no/such/dir-sandstream' }, 'SPAWN_FAILED', undefined],
      ['an argv element with a NUL byte', { argv: ['echo', 'a\u0000b'] }, 'INVALID_ARGUMENT', 'arguments.argv[1]'],
      ['a shell line with a NUL byte', { command: 'echo a\u0000b' }, 'INVALID_ARGUMENT', 'arguments.command'],
    ];
    for (const [what, args, code, key] of cases) {
      it(`${what}: ${code}`, async () => {
        const failed = failureOf((await session.client.callTool({ name: 'sandbox_exec', arguments: args })) as never);
        expect(failed.code).toBe(code);
        if (key !== undefined) expect(failed.key).toBe(key);
        const after = await session.client.callTool({ name: 'sandbox_exec', arguments: { argv: ['echo', 'still here'] } });
        expect(outcome(after as never).stdout).toBe('still here\n');
      });
    }

    it('an unknown tool name (the unprefixed exec too) is a tool error naming the tools', async () => {
      for (const name of ['shell', 'exec']) {
        const failed = failureOf((await session.client.callTool({ name, arguments: {} })) as never);
        expect(failed.code).toBe('INVALID_ARGUMENT');
        expect(failed.message).toContain('sandbox_exec, sandbox_shell, sandbox_start');
      }
    });
  });
});
