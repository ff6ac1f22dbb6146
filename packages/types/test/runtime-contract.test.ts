// Spec 1.1 additions to the Process contract, as the runtime implements
// them: the early command id and started() [SS-ID-1], at-most-once start
// [SS-START-2], and standard input delivered exactly once [SS-STDIN-3].
import { describe, expect, it } from 'vitest';
import { AbortError, SpawnFailed, StdinClosed, TransportError } from '../src/errors.js';
import { deferred, flush, scriptedSandbox } from './runtime-driver.js';

function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

describe('the early command id and started() [SS-ID-1]', () => {
  it('is undefined until the start is confirmed, then the backend id, without reading output', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.startGate = deferred();
    });
    await using proc = sb.stream(['server']);
    let resolvedEarly = false;
    const started = proc.started().then(() => {
      resolvedEarly = true;
    });
    await flush();
    expect(proc.commandId).toBeUndefined();
    expect(proc.pid).toBeUndefined();
    expect(resolvedEarly).toBe(false);
    drivers[0]!.startGate!.resolve({ pid: 31, commandId: 'cmd_abc' });
    await started;
    expect(proc.commandId).toBe('cmd_abc');
    expect(proc.pid).toBe(31);
    drivers[0]!.output('stdout', 'later');
    drivers[0]!.exit(0);
    await proc.wait();
    expect(proc.commandId).toBe('cmd_abc');
  });

  it('substitutes the pid as a string, else the Process id', async () => {
    const { sb, drivers } = scriptedSandbox();
    await using withPid = sb.stream(['a']);
    await withPid.started();
    expect(withPid.commandId).toBe('4242');
    const { sb: other } = scriptedSandbox((driver) => {
      driver.started = {};
      driver.onSignal = () => driver.exit(null, 'SIGTERM');
    });
    await using withoutPid = other.stream(['b']);
    await withoutPid.started();
    expect(withoutPid.pid).toBeUndefined();
    expect(withoutPid.commandId).toBe(withoutPid.id);
    drivers[0]!.exit(0);
  });

  it('started() rejects as wait() does when the command never started', async () => {
    const { sb } = scriptedSandbox((driver) => {
      driver.startGate = deferred();
      driver.startGate.reject(new SpawnFailed(['nope'], 'ENOENT'));
    });
    const proc = sb.stream(['nope']);
    const [started, waited] = await Promise.all([outcome(proc.started()), outcome(proc.wait())]);
    expect(started.error).toBeInstanceOf(SpawnFailed);
    expect(started.error).toBe(waited.error);
    expect(proc.commandId).toBeUndefined();
    await proc[Symbol.asyncDispose]();
    const aborted = scriptedSandbox().sb.stream(['x'], { signal: AbortSignal.abort() });
    expect((await outcome(aborted.started())).error).toBeInstanceOf(AbortError);
    await aborted[Symbol.asyncDispose]();
  });

  it('started() resolves for a command that already exited', async () => {
    const { sb, drivers } = scriptedSandbox();
    const proc = sb.stream(['x']);
    await flush();
    drivers[0]!.exit(0);
    await proc.wait();
    await expect(proc.started()).resolves.toBeUndefined();
  });
});

describe('at-most-once start [SS-START-2]', () => {
  it('a start whose outcome is unknown is a TransportError and is never retried', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.startGate = deferred();
      driver.startGate.reject(new Error('socket hang up'));
    });
    const error = await sb.run(['x']).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).cause).toMatchObject({ message: 'socket hang up' });
    await flush();
    expect(drivers).toHaveLength(1);
    expect(drivers[0]!.count('start')).toBe(1);
  });
});

describe('standard input exactly once [SS-STDIN-3]', () => {
  it('an uncertain write rejects with TransportError, later writes are refused unsent, end() still closes', async () => {
    const uncertain = new TransportError('the write request timed out');
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.onWrite = (text) => {
        if (text.includes('two')) throw uncertain;
      };
    });
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    const writer = proc.stdin!;
    expect(await outcome(writer.write('one'))).toEqual({ value: undefined });
    // Two and three are queued together and go out in one driver call: the
    // call's delivery is uncertain, so both are.
    const batch = await Promise.all(['two', 'three'].map((text) => outcome(writer.write(text))));
    for (const result of batch) expect(result.error).toBe(uncertain);
    const driver = drivers[0]!;
    expect(driver.written).toEqual(['one']);
    expect(driver.count('write')).toBe(2);
    // Everything after it is refused unsent.
    const later = await outcome(writer.write('four'));
    expect(later.error).toBeInstanceOf(TransportError);
    expect((later.error as Error).message).toMatch(/earlier write's delivery is uncertain/);
    expect((later.error as Error).cause).toBe(uncertain);
    expect(driver.count('write')).toBe(2);
    expect(writer.closed).toBe(false);
    await writer.end();
    expect(driver.count('closeStdin')).toBe(1);
    expect(writer.closed).toBe(true);
    // Known closed is StdinClosed, as before.
    expect((await outcome(writer.write('six'))).error).toBeInstanceOf(StdinClosed);
    driver.exit(0);
  });

  it('writes queued behind a call in flight go out together, in call order', async () => {
    const { sb, drivers } = scriptedSandbox(() => undefined);
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    const writer = proc.stdin!;
    await writer.write('first');
    const texts = Array.from({ length: 50 }, (_, index) => `${index},`);
    await Promise.all(texts.map((text) => writer.write(text)));
    const driver = drivers[0]!;
    expect(driver.written.join('')).toBe(`first${texts.join('')}`);
    // One call for the first write, one for the fifty queued behind it.
    expect(driver.count('write')).toBe(2);
    await writer.end();
    driver.exit(0);
  });

  it('a failure the driver does not classify counts as uncertain', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.onWrite = () => {
        throw new Error('ECONNRESET');
      };
    });
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    expect((await outcome(proc.stdin!.write('a'))).error).toMatchObject({ code: 'TRANSPORT' });
    expect((await outcome(proc.stdin!.write('b'))).error).toMatchObject({ code: 'TRANSPORT' });
    expect(drivers[0]!.count('write')).toBe(1);
    drivers[0]!.exit(0);
  });

  it('a pipe known closed stays StdinClosed and refuses nothing else', async () => {
    const { sb, drivers } = scriptedSandbox((driver) => {
      driver.onWrite = () => {
        throw new StdinClosed('the command stopped reading');
      };
    });
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    expect((await outcome(proc.stdin!.write('a'))).error).toBeInstanceOf(StdinClosed);
    expect((await outcome(proc.stdin!.write('b'))).error).toBeInstanceOf(StdinClosed);
    expect(proc.stdin!.closed).toBe(true);
    drivers[0]!.exit(0);
  });
});
