// The shared Process runtime under a terminal (spec 1.5, ADR-0052): the
// option's checks, end-of-file typed rather than a pipe closed, resize in
// order with its refusals, and teardown that hangs the terminal up first.
import { describe, expect, it } from 'vitest';
import { CapabilityNotSupported, InvalidArgument, InvalidState, StdinClosed, TransportError } from '../src/errors.js';
import { deferred, flush, scriptedSandbox } from './runtime-driver.js';

const TERMINAL = { streaming: true, stdin: true, 'resource-limits': false, user: false, attach: true, pty: true };
const SIZE = { cols: 80, rows: 24 };

function terminalSandbox(capabilities: Record<string, boolean> = TERMINAL) {
  return scriptedSandbox(undefined, { capabilities: capabilities as never });
}

/** What the driver was asked to write, control bytes spelled out. */
function typed(written: readonly string[]): string[] {
  return written.map((text) => text.replaceAll('\x04', '^D'));
}

describe('the pty option', () => {
  it('without the capability: CapabilityNotSupported naming pty, before any driver exists', async () => {
    const { sb, drivers } = terminalSandbox({ ...TERMINAL, pty: false });
    expect(() => sb.stream(['sh'], { pty: SIZE })).toThrow(CapabilityNotSupported);
    await expect(sb.run(['sh'], { pty: SIZE })).rejects.toMatchObject({ capability: 'pty' });
    expect(drivers).toHaveLength(0);
  });

  it('a terminal needs no stdin capability of its own; a writer on it still does', () => {
    const { sb, drivers } = terminalSandbox({ ...TERMINAL, stdin: false });
    const proc = sb.stream(['sh'], { pty: SIZE });
    expect(drivers[0]!.command).toMatchObject({ stdin: 'pipe', pty: SIZE });
    expect(() => sb.stream(['sh'], { pty: SIZE, stdin: 'pipe' })).toThrow(expect.objectContaining({ capability: 'stdin' }) as Error);
    void proc[Symbol.asyncDispose]();
  });

  it.each<[unknown, string]>([
    [{ cols: 0, rows: 24 }, 'options.pty.cols'],
    [{ cols: 80, rows: 65_536 }, 'options.pty.rows'],
    [{ cols: 80.5, rows: 24 }, 'options.pty.cols'],
    [{ cols: '80', rows: 24 }, 'options.pty.cols'],
    [{ cols: 80 }, 'options.pty.rows'],
    [{ cols: 80, rows: 24, term: 'vt100' }, 'options.pty.term'],
    [true, 'options.pty'],
  ])('rejects %o as InvalidArgument naming %s', (pty, key) => {
    const { sb, drivers } = terminalSandbox();
    expect(() => sb.stream(['sh'], { pty: pty as never })).toThrow(expect.objectContaining({ key }) as Error);
    expect(drivers).toHaveLength(0);
  });
});

describe('end-of-file on a terminal [T3]', () => {
  it('without a writer, one 0x04 is typed once the start is confirmed, and nothing is closed', async () => {
    const { sb, drivers } = terminalSandbox();
    const proc = sb.stream(['cat'], { pty: SIZE });
    await proc.started();
    await flush();
    expect(typed(drivers[0]!.written)).toEqual(['^D']);
    expect(drivers[0]!.count('closeStdin')).toBe(0);
    expect(proc.stdin).toBeNull();
    drivers[0]!.exit(0);
    await proc.wait();
  });

  it.each<[string[], string[]]>([
    [[], ['^D']],
    [['abc'], ['abc', '^D^D']],
    [['abc\n'], ['abc\n', '^D']],
    [['abc\r'], ['abc\r', '^D']],
    [['abc', '\x04'], ['abc', '^D', '^D']],
  ])('after writes %j, end() types %j and closes nothing', async (writes, expected) => {
    const { sb, drivers } = terminalSandbox();
    const proc = sb.stream(['cat'], { pty: SIZE, stdin: 'pipe' });
    for (const text of writes) await proc.stdin!.write(text);
    await proc.stdin!.end();
    expect(proc.stdin!.closed).toBe(true);
    expect(typed(drivers[0]!.written).join('|')).toBe(expected.join('|'));
    expect(drivers[0]!.count('closeStdin')).toBe(0);
    drivers[0]!.exit(0);
    await proc.wait();
  });

  it('one-shot input is followed by end-of-file', async () => {
    const { sb, drivers } = terminalSandbox();
    const running = sb.run(['cat'], { pty: SIZE, input: 'abc' });
    await flush();
    expect(typed(drivers[0]!.written)).toEqual(['abc', '^D^D']);
    drivers[0]!.exit(0);
    await running;
  });
});

describe('resize [T4]', () => {
  it('reaches the driver in call order, and commands() lists the size last set', async () => {
    const { sb, drivers } = terminalSandbox();
    const proc = sb.stream(['sh'], { pty: SIZE, background: true });
    const gate = deferred<void>();
    drivers[0]!.onResize = (cols) => (cols === 100 ? gate.promise : undefined);
    const first = proc.resize!(100, 30);
    const second = proc.resize!(120, 40);
    await flush();
    expect(drivers[0]!.calls.filter((call) => call.startsWith('resize'))).toEqual(['resize:100x30']);
    gate.resolve();
    await Promise.all([first, second]);
    expect(drivers[0]!.calls.filter((call) => call.startsWith('resize'))).toEqual(['resize:100x30', 'resize:120x40']);
    expect(await sb.commands!()).toEqual([expect.objectContaining({ terminal: { cols: 120, rows: 40 } })]);
    drivers[0]!.onSignal = (signal) => (signal === 'SIGCONT' ? drivers[0]!.exit(null, 'SIGHUP') : undefined);
    await proc[Symbol.asyncDispose]();
  });

  it('checks cols and rows, and refuses on pipes and once settled', async () => {
    const { sb, drivers } = terminalSandbox();
    const proc = sb.stream(['sh'], { pty: SIZE });
    await expect(proc.resize!(0, 24)).rejects.toMatchObject({ key: 'cols' });
    await expect(proc.resize!(80, 1e6)).rejects.toBeInstanceOf(InvalidArgument);
    const piped = sb.stream(['sh']);
    await expect(piped.resize!(80, 24)).rejects.toBeInstanceOf(InvalidState);
    drivers[0]!.exit(0);
    await proc.wait();
    await expect(proc.resize!(80, 24)).rejects.toBeInstanceOf(InvalidState);
    expect(drivers[0]!.calls.some((call) => call.startsWith('resize'))).toBe(false);
    drivers[1]!.exit(0);
    await piped.wait();
  });

  it('a terminal the driver finds closed (the command ended meanwhile) is InvalidState', async () => {
    const { sb, drivers } = terminalSandbox();
    const proc = sb.stream(['sh'], { pty: SIZE });
    drivers[0]!.onResize = () => Promise.reject(new StdinClosed('the terminal is closed'));
    await expect(proc.resize!(90, 30)).rejects.toBeInstanceOf(InvalidState);
    drivers[0]!.exit(0);
    await proc.wait();
  });

  it("a driver's failure is a TransportError, and the command runs on", async () => {
    const { sb, drivers } = terminalSandbox();
    const proc = sb.stream(['sh'], { pty: SIZE });
    drivers[0]!.onResize = () => Promise.reject(new Error('link reset'));
    await expect(proc.resize!(90, 30)).rejects.toBeInstanceOf(TransportError);
    expect(proc.exited).toBe(false);
    drivers[0]!.exit(0);
    await proc.wait();
  });
});

describe('teardown hangs the terminal up first [T5]', () => {
  it('SIGHUP, then at once SIGTERM and SIGCONT; pipes get no SIGHUP', async () => {
    const { sb, drivers } = terminalSandbox();
    const proc = sb.stream(['sh'], { pty: SIZE });
    const piped = sb.stream(['sh']);
    await Promise.all([proc.started(), piped.started()]);
    drivers[0]!.onSignal = (signal) => (signal === 'SIGCONT' ? drivers[0]!.exit(null, 'SIGHUP') : undefined);
    drivers[1]!.onSignal = (signal) => (signal === 'SIGCONT' ? drivers[1]!.exit(null, 'SIGTERM') : undefined);
    await Promise.all([proc[Symbol.asyncDispose](), piped[Symbol.asyncDispose]()]);
    expect(drivers[0]!.signals).toEqual(['SIGHUP', 'SIGTERM', 'SIGCONT']);
    expect(drivers[1]!.signals).toEqual(['SIGTERM', 'SIGCONT']);
  });
});
