/**
 * The driver's terminal mode (spec 1.5, ADR-0052) over the local transport with a terminal
 * (python's pty module under the process, as Docker's Tty or envd's pty): the terminal's bytes as
 * stdout, the reports from the follower of the supervisor's record, exact statuses, input typed,
 * resize, signals to the supervisor where the transport has none, the record removed.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityNotSupported, SpawnFailed } from '@sandstream/types';
import { isLive, markedProcesses } from '@sandstream/test-support/processes';
import { within } from '@sandstream/test-support/timing';
import { TAG_VARIABLE } from '../src/index.js';
import { remoteSandbox } from './remote-sandbox.js';

const PTY = { cols: 80, rows: 24 };
const base = mkdtempSync(join(tmpdir(), 'sandstream-tty-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** Every byte a Process yields, as latin1 text. */
async function collect(chunks: AsyncIterable<{ readonly data: Uint8Array }>): Promise<string> {
  let text = '';
  for await (const chunk of chunks) text += Buffer.from(chunk.data).toString('latin1');
  return text;
}

describe('the remote driver on a terminal', () => {
  it('runs the command on a terminal of the size asked: its bytes as stdout, the exact code, one start more than pipes', async () => {
    const { sb, transport } = remoteSandbox({ pty: true }, { recordBase: `${base}/a-` });
    const result = await sb.run(['sh', '-c', 'for fd in 0 1 2; do [ -t $fd ] && printf y; done; echo; stty size; echo "$TERM"; echo err >&2; exit 3'], { pty: PTY });
    expect(result).toMatchObject({ exitCode: 3, signal: null, stderrText: '' });
    expect(result.stdoutText).toBe('yyy\r\n24 80\r\nxterm-256color\r\nerr\r\n');
    // The supervisor on the terminal and the follower of its record.
    expect(transport.counted.starts).toHaveLength(2);
    expect(transport.counted.starts[0]!.pty).toEqual(PTY);
    expect(transport.counted.helpers).toEqual([]);
    // The follower removed the record once it printed `gone`.
    expect(readdirSync(base).filter((name) => name.startsWith('a-tty-'))).toEqual([]);
  });

  it('gives a death by signal as the signal, not 128+n, and a code of 130 as the code', async () => {
    const { sb } = remoteSandbox({ pty: true });
    expect(await sb.run(['sh', '-c', 'kill -s TERM $$'], { pty: PTY })).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    expect(await sb.run(['sh', '-c', 'exit 130'], { pty: PTY })).toMatchObject({ exitCode: 130, signal: null });
  });

  it('types input and end-of-file on the terminal, and a command nobody writes to reads end-of-file', async () => {
    const { sb, transport } = remoteSandbox({ pty: true });
    const proc = sb.stream(['cat'], { pty: PTY, stdin: 'pipe' });
    const text = collect(proc);
    await proc.stdin!.write(new TextEncoder().encode('abc'));
    await proc.stdin!.end();
    const result = await within(10_000, proc.wait(), 'the result');
    expect(result.exitCode).toBe(0);
    expect(await text).toBe('abcabc');
    expect(transport.counted.stdinCloses).toBe(0);
    expect(await within(10_000, sb.run(['cat'], { pty: PTY }), 'cat without input')).toMatchObject({ exitCode: 0 });
  });

  it('resizes the terminal through the transport', async () => {
    const { sb, transport } = remoteSandbox({ pty: true });
    const proc = sb.stream(['sh', '-c', 'read x; stty size'], { pty: PTY, stdin: 'pipe' });
    const text = collect(proc);
    await proc.started();
    await proc.resize!(100, 40);
    await proc.stdin!.write(new TextEncoder().encode('\r'));
    const result = await within(10_000, proc.wait(), 'the result');
    expect(result.exitCode).toBe(0);
    expect(await text).toBe('\r\n40 100\r\n');
    expect(transport.counted.resizes).toEqual([[100, 40]]);
    await expect(proc.resize!(90, 30)).rejects.toThrow(/ended|no terminal/);
  });

  it('ends the whole session where the transport cannot signal: SIGHUP and SIGTERM go to the supervisor, which forwards them', async () => {
    const { sb, transport, commands } = remoteSandbox({ pty: true, signals: [] }, { graceMs: 300 });
    const result = await within(15_000, sb.run(['sh', '-c', 'set -m; sleep 37 & echo "job $!"; trap "" TERM; sleep 40'], { pty: PTY, timeout: 800 }), 'the run');
    expect(result.timedOut).toBe(true);
    const job = Number(/job (\d+)/.exec(result.stdoutText)?.[1]);
    expect(job).toBeGreaterThan(0);
    expect(isLive(job)).toBe(false);
    const helpers = transport.counted.helpers.map((argv) => argv[4]);
    expect(helpers).toContain('process');
    expect(markedProcesses(TAG_VARIABLE, `${commands.prefix}-`, { prefix: true })).toEqual([]);
  });

  it('reports the command exit when a job of its session outlives it', async () => {
    const { sb } = remoteSandbox({ pty: true });
    const result = await within(15_000, sb.run(['sh', '-c', 'sleep 30 & exit 4'], { pty: PTY }), 'the run');
    expect(result).toMatchObject({ exitCode: 4 });
  });

  it('reports a start that failed as SpawnFailed: a program that does not exist, a start the backend refused', async () => {
    const { sb, commands } = remoteSandbox({ pty: true });
    await expect(within(15_000, sb.run(['no-such-program-sandstream'], { pty: PTY }), 'a missing program')).rejects.toBeInstanceOf(SpawnFailed);
    await expect(within(15_000, sb.run(['true'], { pty: PTY, cwd: '/no/such/directory' }), 'a refused start')).rejects.toBeInstanceOf(SpawnFailed);
    // The follower of a record that never came is gone too.
    await within(5_000, (async () => {
      while (markedProcesses(TAG_VARIABLE, `${commands.prefix}-`, { prefix: true }).length > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    })(), 'the follower swept');
  });

  it('leaves no terminal record behind a close that ended a running command', async () => {
    const { sb } = remoteSandbox({ pty: true }, { recordBase: `${base}/c-`, graceMs: 200 });
    const proc = sb.stream(['sleep', '30'], { pty: PTY });
    await proc.started();
    await sb.close();
    await proc.wait().catch(() => undefined);
    expect(readdirSync(base).filter((name) => name.startsWith('c-tty-'))).toEqual([]);
  });

  it('refuses pty on a transport without terminals', async () => {
    const { sb } = remoteSandbox();
    await expect(sb.run(['true'], { pty: PTY })).rejects.toBeInstanceOf(CapabilityNotSupported);
    expect(existsSync(base)).toBe(true);
  });
});
