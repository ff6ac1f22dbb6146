/**
 * The emulator's terminals (envd's PTY) against the e2b SDK alone:
 * `sandbox.pty.create` (a login bash on a terminal of the size asked),
 * `sendInput`, `resize`, `kill`, `connect`, and what envd answers to stdin
 * input and CloseStdin on a terminal; StreamInput through a Connect client
 * of envd's process service (the SDK never streams input: its fetch
 * transport cannot send a streaming body). Typed commands spell their
 * markers split (`RE""ADY`) so that the terminal's echo does not match.
 */
import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { CommandExitError, Sandbox, type CommandHandle } from 'e2b';
import { Process, type StreamInputRequestSchema } from '../src/gen/envd-process_pb.js';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { emptyHome, leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
const HOME = emptyHome();
const encoder = new TextEncoder();
let envd: EnvdEmulator;
let sandbox: Sandbox;
/** Pids below 1 that something passed to process.kill: the terminal library's destroy() and kill() would. */
const wildKills: number[] = [];

beforeAll(async () => {
  const realKill = process.kill.bind(process);
  vi.spyOn(process, 'kill').mockImplementation((pid: number, signal?: string | number) => {
    if (pid < 1) {
      wildKills.push(pid);
      throw new Error(`process.kill(${pid}) refused by the test`);
    }
    return realKill(pid, signal);
  });
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID, HOME } });
  sandbox = await Sandbox.create({ debug: true, sandboxUrl: envd.url });
});

afterEach(async () => {
  await waitFor(() => leftovers(RUN_ID).length === 0, 5_000, `processes left: ${leftovers(RUN_ID).join('; ')}`);
  expect(wildKills).toEqual([]);
});

afterAll(async () => {
  await envd?.close();
  vi.restoreAllMocks();
  rmSync(HOME, { recursive: true, force: true });
});

/** A terminal through the SDK, its output decoded as it comes. */
async function openTerminal(cols: number, rows: number): Promise<{ handle: CommandHandle; output: () => string; type: (text: string) => Promise<void> }> {
  const decoder = new TextDecoder();
  let output = '';
  const handle = await sandbox.pty.create({ cols, rows, onData: (data) => void (output += decoder.decode(data, { stream: true })) });
  return { handle, output: () => output, type: (text) => sandbox.pty.sendInput(handle.pid, encoder.encode(text)) };
}

async function outputHas(output: () => string, pattern: RegExp, what: string): Promise<RegExpMatchArray> {
  await waitFor(() => pattern.test(output()), 10_000, () => `${what}: ${JSON.stringify(output().slice(-400))}`);
  return pattern.exec(output())!;
}

describe('terminals of the envd emulator under the e2b SDK', () => {
  it('starts the login shell on a terminal of the size asked, leading its session, and reports `exit 3`', async () => {
    const { handle, output, type } = await openTerminal(100, 30);
    const start = envd.requests.filter((r) => r.route === 'Start').at(-1)!;
    expect(start.body).toMatchObject({
      process: { cmd: '/bin/bash', args: ['-i', '-l'], envs: { TERM: 'xterm-256color', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' } },
      pty: { size: { cols: 100, rows: 30 } },
    });
    expect(envd.process(handle.pid)).toMatchObject({ pty: { cols: 100, rows: 30 }, stdin: false });
    await type(`stty size; tty; awk '{print "SE""SSION", $6}' /proc/$$/stat; : </dev/tty && echo CT""TY; echo PI""D=$$\n`);
    await outputHas(output, /PID=\d+/, 'the shell answered');
    expect(output()).toContain('30 100\r\n');
    expect(output()).toMatch(/\/dev\/pts\/\d+\r\n/);
    // The command leads its session, with the terminal as its controlling terminal.
    expect(output()).toContain(`SESSION ${handle.pid}\r\n`);
    expect(output()).toContain('CTTY\r\n');
    expect(output()).toContain(`PID=${handle.pid}\r\n`);
    await type('exit 3\n');
    const error = await within(10_000, handle.wait().catch((e: unknown) => e), 'the end after exit 3');
    expect(error).toBeInstanceOf(CommandExitError);
    expect((error as CommandExitError).exitCode).toBe(3);
    expect(envd.process(handle.pid)?.end).toEqual({ exitCode: 3, exited: true, status: 'exit status 3', error: 'exit status 3' });
  });

  it('resizes (SIGWINCH reaches the foreground job), interrupts with 0x03, and kill() ends it with "signal: killed"', async () => {
    const { handle, output, type } = await openTerminal(80, 24);
    await type(`sh -c 'trap "echo WIN""CH \\$(stty size)" WINCH; echo RE""ADY; while :; do sleep 0.1; done'\n`);
    await outputHas(output, /READY/, 'the job started');
    await sandbox.pty.resize(handle.pid, { cols: 120, rows: 40 });
    await outputHas(output, /WINCH 40 120/, 'the trap saw the new size');
    expect(envd.process(handle.pid)?.pty).toEqual({ cols: 120, rows: 40 });
    // Ctrl+C: the terminal sends SIGINT to the foreground job; the shell goes on.
    await type('\x03');
    await type('echo "R""C=$?"\n');
    await outputHas(output, /RC=130/, 'the job ended by SIGINT');
    expect(await handle.kill()).toBe(true);
    const error = await within(10_000, handle.wait().catch((e: unknown) => e), 'the end after kill');
    expect(error).toBeInstanceOf(CommandExitError);
    expect((error as CommandExitError).exitCode).toBe(-1);
    expect((error as CommandExitError).error).toBe('signal: killed');
    expect(envd.process(handle.pid)?.signals).toEqual(['SIGKILL']);
  });

  it("ends once nothing holds the terminal any more, not at the leader's exit (as envd's reader does)", async () => {
    const { handle, output, type } = await openTerminal(80, 24);
    // The job is in a group of its own: the kernel's SIGHUP at the leader's exit goes to the shell's group only.
    await type('(sleep 1; echo LA""TE) & exit 0\n');
    const result = await within(10_000, handle.wait(), 'the end after the job');
    expect(result.exitCode).toBe(0);
    expect(output()).toMatch(/LATE\r\n$/);
    expect(envd.process(handle.pid)?.end?.status).toBe('exit status 0');
  });

  it('loses nothing of the output written just before the end', async () => {
    for (let run = 0; run < 3; run++) {
      const { handle, output, type } = await openTerminal(80, 24);
      await type(`head -c 1000000 /dev/zero | tr '\\0' Q; printf TA; printf IL; exit 7\n`);
      await within(20_000, handle.wait().catch(() => undefined), 'the end after the output');
      // Every Q, in one run, then the marker (the typed line's own Q is echoed apart).
      expect(/Q+TAIL/.exec(output())?.[0].length).toBe(1_000_000 + 'TAIL'.length);
      expect(envd.process(handle.pid)?.end?.exitCode).toBe(7);
    }
  });

  it('answers stdin input, CloseStdin and the wrong kind of input as envd does; Ctrl+D ends the shell', async () => {
    const { handle, output, type } = await openTerminal(80, 24);
    await expect(sandbox.commands.sendStdin(handle.pid, 'x')).rejects.toThrow(
      'error writing to stdin: tty assigned to process — input should be written to the pty, not the stdin',
    );
    await expect(sandbox.commands.closeStdin(handle.pid)).rejects.toThrow('error closing stdin: cannot close stdin for PTY process — send Ctrl+D (0x04) instead');
    const cat = await sandbox.commands.run('cat', { background: true, stdin: true });
    await expect(sandbox.pty.sendInput(cat.pid, encoder.encode('x'))).rejects.toThrow(
      'error writing to tty: tty not assigned to process — input should be written to the stdin, not the tty',
    );
    await expect(sandbox.pty.resize(cat.pid, { cols: 90, rows: 20 })).rejects.toThrow('error resizing tty: tty not assigned to process');
    await cat.kill();
    await cat.wait().catch(() => undefined);
    // Input the terminal is still processing is not lost: a line, then end-of-file on an empty line.
    await type('echo TY""PED\n');
    await outputHas(output, /TYPED\r\n/, 'the line typed');
    await type('\x04');
    const result = await within(10_000, handle.wait(), 'the end after Ctrl+D');
    expect(result.exitCode).toBe(0);
    await expect(sandbox.pty.sendInput(handle.pid, encoder.encode('x'))).rejects.toThrow(/not found/);
  });

  it('lists a terminal and connects to it: a second client sees what comes next', async () => {
    const { handle, output, type } = await openTerminal(80, 24);
    expect((await sandbox.commands.list()).find((p) => p.pid === handle.pid)).toMatchObject({ cmd: '/bin/bash', args: ['-i', '-l'] });
    const decoder = new TextDecoder();
    let seen = '';
    const second = await sandbox.pty.connect(handle.pid, { onData: (data) => void (seen += decoder.decode(data, { stream: true })) });
    await type('echo CON""NECTED\n');
    await outputHas(output, /CONNECTED\r\n/, 'the first client');
    await waitFor(() => seen.includes('CONNECTED\r\n'), 10_000, 'the second client');
    await sandbox.pty.kill(handle.pid);
    await Promise.all([handle.wait().catch(() => undefined), second.wait().catch(() => undefined)]);
  });

  it('takes terminal input through StreamInput: a start event, data events, keepalives', async () => {
    const { handle, output } = await openTerminal(80, 24);
    const client = createClient(Process, createConnectTransport({ baseUrl: envd.url, httpVersion: '1.1' }));
    const pid = { selector: { case: 'pid' as const, value: handle.pid } };
    async function* events(): AsyncGenerator<MessageInitShape<typeof StreamInputRequestSchema>> {
      yield { event: { case: 'start' as const, value: { process: pid } } };
      yield { event: { case: 'data' as const, value: { input: { input: { case: 'pty' as const, value: encoder.encode('echo ST""RE') } } } } };
      yield { event: { case: 'keepalive' as const, value: {} } };
      yield { event: { case: 'data' as const, value: { input: { input: { case: 'pty' as const, value: encoder.encode('AMED\n') } } } } };
    }
    await client.streamInput(events());
    await outputHas(output, /STREAMED\r\n/, 'the streamed line');
    await sandbox.pty.kill(handle.pid);
    await handle.wait().catch(() => undefined);
  });

  it("close() ends a terminal's session, the jobs that outlive its shell included", async () => {
    const other = await startEnvdEmulator({ env: { [MARKER]: RUN_ID, HOME } });
    const otherSandbox = await Sandbox.create({ debug: true, sandboxUrl: other.url });
    const decoder = new TextDecoder();
    let output = '';
    const handle = await otherSandbox.pty.create({ cols: 80, rows: 24, onData: (data) => void (output += decoder.decode(data, { stream: true })) });
    await otherSandbox.pty.sendInput(handle.pid, encoder.encode('sleep 300 & echo JO""B=$!; exit\n'));
    await outputHas(() => output, /JOB=\d+/, 'the job started');
    await waitFor(() => leftovers(RUN_ID).length === 1, 5_000, () => `only the job is left: ${leftovers(RUN_ID).join('; ')}`);
    // The shell is gone, the job holds the terminal: the command runs on.
    expect(other.process(handle.pid)?.end).toBeUndefined();
    await other.close();
    await waitFor(() => leftovers(RUN_ID).length === 0, 5_000, () => `left after close: ${leftovers(RUN_ID).join('; ')}`);
    await handle.wait().catch(() => undefined);
  });
});
