// Background commands in the host runtime (spec 1.2, ADR-0036): what defineSandbox gives every
// adapter with the `attach` capability. Driven by scripted drivers: nothing waits for a clock.
import { describe, expect, it } from 'vitest';
import type { BackgroundProcess } from '../src/contract.js';
import { CapabilityNotSupported, CommandNotFound, InvalidArgument, InvalidState, SandboxClosed, TransportError } from '../src/errors.js';
import type { OutputChunk } from '../src/schema/output-chunk.js';
import { flush, ScriptedDriver, scriptedSandbox } from './runtime-driver.js';

const ATTACH = { streaming: true, stdin: true, 'resource-limits': false, user: false, attach: true, 'replay-tail': true } as const;
const decoder = new TextDecoder();

/** Ends on SIGTERM, as a plain command does. */
const diesOnTerm = (driver: ScriptedDriver): void => {
  driver.onSignal = (signal) => {
    if (signal === 'SIGTERM' || signal === 'SIGKILL') queueMicrotask(() => driver.exit(null, signal));
  };
};

function attachSandbox(replayBytes = 1024) {
  return scriptedSandbox(diesOnTerm, { capabilities: ATTACH, replayBytes });
}

/** Reads every chunk until the end, per stream as text. */
async function readAll(proc: AsyncIterable<OutputChunk>): Promise<{ stdout: string; stderr: string }> {
  const text = { stdout: '', stderr: '' };
  for await (const chunk of proc) text[chunk.stream] += decoder.decode(chunk.data);
  return text;
}

async function startBackground(sb: ReturnType<typeof attachSandbox>['sb']): Promise<BackgroundProcess> {
  const proc = sb.stream(['server'], { background: true });
  await proc.started();
  return proc;
}

describe('background starts [SS-BG-4, SS-CAP-1]', () => {
  it('refuses the options of a scope before any side effect', async () => {
    const { sb, drivers } = attachSandbox();
    const signal = new AbortController().signal;
    for (const options of [{ timeout: 1 }, { signal }, { stdin: 'pipe' as const }, { input: 'x' }]) {
      expect(() => sb.stream(['x'], { background: true, ...options })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', key: 'options.background' }),
      );
    }
    expect(() => sb.stream(['x'], { background: 'yes' as unknown as true })).toThrow(InvalidArgument);
    await expect(sb.run(['x'], { background: true } as never)).rejects.toThrow(/option of stream\(\)/);
    expect(drivers).toHaveLength(0);
  });

  it('needs the attach capability: stream(), attach() and commands() refuse naming it, before any side effect', async () => {
    const { sb, drivers } = scriptedSandbox();
    expect(() => sb.stream(['x'], { background: true })).toThrow(expect.objectContaining({ capability: 'attach' }));
    await expect(sb.attach!('x')).rejects.toBeInstanceOf(CapabilityNotSupported);
    await expect(sb.commands!()).rejects.toMatchObject({ capability: 'attach' });
    expect(drivers).toHaveLength(0);
  });
});

describe('attach [SS-ATTACH-1, SS-ATTACH-2, SS-ATTACH-4]', () => {
  it('gives the starter every byte, a later attach the kept tail with its skip counted exactly, and no byte twice', async () => {
    const { sb, drivers } = attachSandbox(8);
    const starter = await startBackground(sb);
    const driver = drivers[0]!;
    expect(starter.commandId).toMatch(/^[0-9a-f-]{36}$/);
    expect(starter.skipped).toEqual({ stdout: 0, stderr: 0 });
    const starterRead = readAll(starter);
    for (const part of ['aaaa', 'bbbb', 'cccc', 'dddd']) driver.output('stdout', part);
    driver.output('stderr', 'e1');
    await flush();
    const tail = await sb.attach!(starter.commandId!);
    const following = await sb.attach!(starter.commandId!, { replay: false });
    // Whole chunks are kept while at least 8 bytes stay: cccc dddd.
    expect(tail.skipped).toEqual({ stdout: 8, stderr: 0 });
    expect(following.skipped).toEqual({ stdout: 16, stderr: 2 });
    const tailRead = readAll(tail);
    const followRead = readAll(following);
    driver.output('stdout', 'eeee');
    driver.exit(3);
    expect(await tailRead).toEqual({ stdout: 'ccccddddeeee', stderr: 'e1' });
    expect(await followRead).toEqual({ stdout: 'eeee', stderr: '' });
    expect(await starterRead).toEqual({ stdout: 'aaaabbbbccccddddeeee', stderr: 'e1' });
    expect((await tail.wait()).exitCode).toBe(3);
  });

  it('an unknown id is CommandNotFound and starts nothing; a bad id or option is InvalidArgument', async () => {
    const { sb, drivers } = attachSandbox();
    await expect(sb.attach!('no-such-command')).rejects.toEqual(new CommandNotFound('no-such-command'));
    await expect(sb.attach!('')).rejects.toMatchObject({ key: 'commandId' });
    await expect(sb.attach!('x', { replay: 1 as unknown as boolean })).rejects.toMatchObject({ key: 'options.replay' });
    await expect(sb.attach!('x', { follow: true } as never)).rejects.toMatchObject({ key: 'options.follow' });
    expect(drivers).toHaveLength(0);
    expect(await sb.commands!()).toEqual([]);
  });

  it('a Process that falls further behind than its bound rejects with TransportError carrying the id; the command runs on', async () => {
    const { sb, drivers } = attachSandbox(4);
    // The bound is the larger of replayBytes and the high-water mark (64 bytes in these tests).
    const starter = await startBackground(sb);
    const iterator = starter[Symbol.asyncIterator]();
    drivers[0]!.output('stdout', 'x'.repeat(100));
    const error = await iterator.next().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).commandId).toBe(starter.commandId);
    expect(await sb.commands!()).toEqual([{ commandId: starter.commandId, argv: ['server'], state: 'running' }]);
    await sb.close();
  });
});

describe('a full tail [SS-ATTACH-4]', () => {
  it('an attach replays a kept tail larger than the bound, on both streams, without overrunning', async () => {
    // replayBytes and the high-water mark are both 64: each stream keeps whole chunks while 64 bytes stay.
    const { sb, drivers } = attachSandbox(64);
    const starter = await startBackground(sb);
    await starter.detach();
    const driver = drivers[0]!;
    for (const part of ['a', 'b', 'c']) driver.output('stdout', part.repeat(40));
    driver.output('stderr', 'e'.repeat(40));
    await flush();
    const tail = await sb.attach!(starter.commandId!);
    // 80 bytes of stdout kept (bbbb..cccc) and 40 of stderr: 120 queued at once, above the bound of 64.
    expect(tail.skipped).toEqual({ stdout: 40, stderr: 0 });
    const reading = readAll(tail);
    driver.output('stdout', 'd'.repeat(10));
    driver.exit(0);
    expect(await reading).toEqual({ stdout: `${'b'.repeat(40)}${'c'.repeat(40)}${'d'.repeat(10)}`, stderr: 'e'.repeat(40) });
    await sb.close();
  });

  it('a view that falls more than the bound behind what it replayed still rejects with TransportError', async () => {
    const { sb, drivers } = attachSandbox(64);
    const starter = await startBackground(sb);
    await starter.detach();
    const driver = drivers[0]!;
    driver.output('stdout', 'x'.repeat(60));
    await flush();
    const view = await sb.attach!(starter.commandId!);
    // Nothing read: 60 replayed and 100 more queued, beyond the 64 allowed past the replay.
    driver.output('stdout', 'y'.repeat(100));
    await flush();
    const iterator = view[Symbol.asyncIterator]();
    let error: unknown;
    try {
      for (;;) if ((await iterator.next()).done === true) break;
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).commandId).toBe(starter.commandId);
    await sb.close();
  });
});

describe('detach and disposal [SS-BG-2, SS-ATTACH-5, SS-ATTACH-6]', () => {
  it('detach() leaves the command running and listed, and releases the Process', async () => {
    const { sb, drivers } = attachSandbox();
    const proc = await startBackground(sb);
    await proc.detach();
    await expect(proc.wait()).rejects.toBeInstanceOf(InvalidState);
    await expect(proc.kill()).rejects.toBeInstanceOf(InvalidState);
    await proc[Symbol.asyncDispose]();
    expect(drivers[0]!.signals).toEqual([]);
    expect(await sb.commands!()).toEqual([{ commandId: proc.commandId, argv: ['server'], state: 'running' }]);
    await sb.close();
  });

  it('disposing an undetached Process, started or attached, terminates the command and forgets it', async () => {
    const { sb, drivers } = attachSandbox();
    const proc = await startBackground(sb);
    await proc.detach();
    {
      await using attached = await sb.attach!(proc.commandId!, { replay: false });
      expect(attached.exited).toBe(false);
    }
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
    await expect(sb.attach!(proc.commandId!)).rejects.toBeInstanceOf(CommandNotFound);
    expect(await sb.commands!()).toEqual([]);
  });

  it('leaving the loop of an undetached Process terminates the command', async () => {
    const { sb, drivers } = attachSandbox();
    const proc = await startBackground(sb);
    drivers[0]!.output('stdout', 'ready');
    for await (const chunk of proc) if (decoder.decode(chunk.data) === 'ready') break;
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
    expect(await sb.commands!()).toEqual([]);
  });

  it('an ended command stays listed; attaching gives its result and replay, and disposal forgets it', async () => {
    const { sb, drivers } = attachSandbox();
    const proc = await startBackground(sb);
    await proc.detach();
    drivers[0]!.output('stdout', 'done');
    drivers[0]!.exit(null, 'SIGTERM');
    await flush();
    expect(await sb.commands!()).toEqual([{ commandId: proc.commandId, argv: ['server'], state: 'ended' }]);
    const ended = await sb.attach!(proc.commandId!);
    expect(ended.exited).toBe(true);
    expect(await readAll(ended)).toEqual({ stdout: 'done', stderr: '' });
    expect(await ended.wait()).toMatchObject({ exitCode: null, signal: 'SIGTERM', streamed: true });
    await ended[Symbol.asyncDispose]();
    expect(drivers[0]!.count('start')).toBe(1);
    expect(await sb.commands!()).toEqual([]);
  });
});

describe('close() [SS-BG-3]', () => {
  it('terminates every background command, detached or not, and nothing is listed or attachable after', async () => {
    const { sb, drivers } = attachSandbox();
    const detached = await startBackground(sb);
    await detached.detach();
    const held = await startBackground(sb);
    const heldEnd = held.wait();
    await sb.close();
    expect(drivers.map((driver) => driver.signals)).toEqual([['SIGTERM'], ['SIGTERM']]);
    expect(await heldEnd).toMatchObject({ signal: 'SIGTERM' });
    await expect(sb.commands!()).rejects.toBeInstanceOf(SandboxClosed);
    await expect(sb.attach!(detached.commandId!)).rejects.toBeInstanceOf(SandboxClosed);
  });
});

/** A backend whose records are a map, and whose every start and follow is a scripted driver. */
function keepingBackend() {
  const records = new Map<string, readonly string[]>();
  const followers: ScriptedDriver[] = [];
  const forgotten: string[] = [];
  let next = 0;
  const background = {
    start(command: { argv: readonly string[] }) {
      const commandId = `cmd-${++next}`;
      records.set(commandId, command.argv);
      const driver = new ScriptedDriver();
      diesOnTerm(driver);
      return { driver, commandId };
    },
    async follow(commandId: string, replay: boolean) {
      const argv = records.get(commandId);
      if (argv === undefined) throw new CommandNotFound(commandId);
      const driver = new ScriptedDriver();
      diesOnTerm(driver);
      followers.push(driver);
      return { driver, argv, skipped: replay ? { stdout: 0, stderr: 0 } : undefined };
    },
    async list() {
      return [...records].map(([commandId, argv]) => ({ commandId, argv, state: 'running' as const }));
    },
    async forget(commandId: string) {
      forgotten.push(commandId);
      records.delete(commandId);
    },
  };
  const handle = () => scriptedSandbox(diesOnTerm, { capabilities: { ...ATTACH, 'attach-reconnect': true, 'replay-tail': false, 'replay-full': true }, background } as never);
  return { handle, records, followers, forgotten };
}

describe('with a backend that keeps the records (the remote kit\'s part) [SS-RECON-1]', () => {

  it("another handle lists and attaches what the first started; its close() ends only what it still reads, and a kill by id forgets the record", async () => {
    const { handle, followers, forgotten, records } = keepingBackend();
    const first = handle();
    const server = first.sb.stream(['server'], { background: true });
    await server.started();
    await server.detach();
    const second = handle();
    expect(await second.sb.commands!()).toEqual([{ commandId: 'cmd-1', argv: ['server'], state: 'running' }]);
    const watched = await second.sb.attach!('cmd-1', { replay: false });
    expect(watched.skipped).toBeUndefined();
    // Known before its driver confirmed anything: it is the id it was attached by.
    expect(watched.commandId).toBe('cmd-1');
    await watched.started();
    await watched.detach();
    await second.sb.close();
    // Detached in the second handle: only its following ended, nothing was sent to the command.
    expect(followers[0]!.signals).toEqual([]);
    expect(first.drivers).toHaveLength(0); // the backend's start made the starter's driver
    const third = handle();
    {
      await using doomed = await third.sb.attach!('cmd-1');
      expect(doomed.skipped).toEqual({ stdout: 0, stderr: 0 });
      await doomed.started();
    }
    expect(followers[1]!.signals).toEqual(['SIGTERM']);
    expect(forgotten).toEqual(['cmd-1']);
    expect(records.size).toBe(0);
    await expect(third.sb.attach!('cmd-1')).rejects.toBeInstanceOf(CommandNotFound);
    await first.sb.close();
    await third.sb.close();
  });
});

describe('close() of a handle that follows what another started [SS-RECON-1, SS-ATTACH-6]', () => {
  it('ends a command it attached to through its undetached Process, and leaves no rejection unhandled', async () => {
    const { handle, followers } = keepingBackend();
    const first = handle();
    const server = first.sb.stream(['server'], { background: true });
    await server.started();
    await server.detach();
    const second = handle();
    const watched = await second.sb.attach!('cmd-1', { replay: false });
    await watched.started();
    const unhandled: unknown[] = [];
    const listener = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      await second.sb.close();
      // Unhandled rejections are reported after the microtasks of a turn: wait a few turns.
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', listener);
    }
    expect(unhandled).toEqual([]);
    // Its Process was not detached: the close ended the command through it (ADR-0036).
    expect(followers[0]!.signals).toEqual(['SIGTERM']);
    await first.sb.close();
  });
});

describe('detach() after the end [SS-BG-2]', () => {
  it('releases the Process only: its disposal does not forget the ended command', async () => {
    const { sb, drivers } = attachSandbox();
    const proc = await startBackground(sb);
    drivers[0]!.exit(5);
    await flush();
    expect(proc.exited).toBe(true);
    await proc.detach();
    await proc[Symbol.asyncDispose]();
    const ended = await sb.attach!(proc.commandId!);
    expect(await ended.wait()).toMatchObject({ exitCode: 5 });
    await sb.close();
  });
});
