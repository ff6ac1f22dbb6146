import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { within } from '@sandstream/test-support/timing';
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
  it('lists exec, with an input schema that rejects unknown keys and an output schema, then the background tools, each closed to unknown keys', async () => {
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['exec', 'start', 'read', 'write', 'kill', 'list']);
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
    const n = 2000;
    const command = `i=0; while [ $i -lt ${n} ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done; printf 'out tail'; printf 'err tail' >&2`;
    const { result, lines } = await execWithProgress(session.client, { command });
    const out = outcome(result);
    expect(out.exitCode).toBe(0);
    const stdout = lines.filter((l) => l.stream === 'stdout');
    const stderr = lines.filter((l) => l.stream === 'stderr');
    expect(stdout.length).toBe(n + 1);
    expect(stderr.length).toBe(n + 1);
    expect(lines.length).toBe(2 * n + 2);
    expect(stdout.map((l) => l.text).join('')).toBe(out.stdout);
    expect(stderr.map((l) => l.text).join('')).toBe(out.stderr);
    expect(stdout.at(-1)!.text).toBe('out tail');
    expect(stdout.slice(0, n).map((l) => l.text)).toEqual(Array.from({ length: n }, (_, i) => `out ${i}\n`));
    expect(stderr.slice(0, n).map((l) => l.text)).toEqual(Array.from({ length: n }, (_, i) => `err ${i}\n`));
    // The progress counter is the arrival order: 1, 2, 3, ... with no gap or repeat.
    expect(lines.map((l) => l.progress)).toEqual(Array.from({ length: lines.length }, (_, i) => i + 1));
  });

  it('sends no progress when the request carries no progress token, and still returns the output', async () => {
    const result = await session.client.callTool({ name: 'exec', arguments: { argv: ['printf', 'a\\nb\\n'] } });
    expect(outcome(result as never)).toMatchObject({ exitCode: 0, stdout: 'a\nb\n', stderr: '', truncated: false });
    expect((result.content as { text: string }[])[0]!.text).toContain('exit code 0');
  });

  it('passes cwd, env and stdin, and reports the exit code', async () => {
    const result = await session.client.callTool({
      name: 'exec',
      arguments: { command: 'pwd; echo "$GREETING"; cat; exit 3', cwd: dir, env: { GREETING: 'hello' }, stdin: 'from stdin\n' },
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

  it('keeps at most maxOutputBytes per stream, flags the truncation, and still notifies the lines past the cap', async () => {
    const { result, lines } = await execWithProgress(session.client, { command: 'seq 1 1000', maxOutputBytes: 10 });
    const out = outcome(result);
    expect(out.truncated).toBe(true);
    expect(out.stdout).toBe('1\n2\n3\n4\n5\n');
    expect(lines.length).toBe(1000);
    expect(lines.at(-1)!.text).toBe('1000\n');
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
      ['a missing binary', { argv: ['/no/such/binary-sandstream'] }, 'SPAWN_FAILED', undefined],
      ['a working directory that does not exist', { argv: ['true'], cwd: '/no/such/dir-sandstream' }, 'SPAWN_FAILED', undefined],
      ['an argv element with a NUL byte', { argv: ['echo', 'a\u0000b'] }, 'INVALID_ARGUMENT', 'arguments.argv[1]'],
      ['a shell line with a NUL byte', { command: 'echo a\u0000b' }, 'INVALID_ARGUMENT', 'arguments.command'],
    ];
    for (const [what, args, code, key] of cases) {
      it(`${what}: ${code}`, async () => {
        const failed = failureOf((await session.client.callTool({ name: 'exec', arguments: args })) as never);
        expect(failed.code).toBe(code);
        if (key !== undefined) expect(failed.key).toBe(key);
        const after = await session.client.callTool({ name: 'exec', arguments: { argv: ['echo', 'still here'] } });
        expect(outcome(after as never).stdout).toBe('still here\n');
      });
    }

    it('an unknown tool name is a tool error too', async () => {
      const failed = failureOf((await session.client.callTool({ name: 'shell', arguments: {} })) as never);
      expect(failed.code).toBe('INVALID_ARGUMENT');
    });
  });
});
