// The shared Process runtime (`@sandstream/types/runtime`) against a scripted
// in-memory driver: the semantics every adapter built on defineSandbox() gets.
// This file: capability checks before a start, run()'s output and its callback, and standard input.
import { afterEach, describe, expect, it } from 'vitest';
import { CallbackFailed, CapabilityNotSupported, StdinClosed } from '../src/errors.js';
import type { CapabilityManifest } from '../src/schema/capability.js';
import { validatorFor } from '../src/validators.js';
import { fakeSandbox, resetFakes, settle } from './runtime-fake-sandbox.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

afterEach(resetFakes);

describe('capabilities [SS-CAP-1, SS-CAP-2]', () => {
  it.each<[Partial<CapabilityManifest>, () => unknown, string]>([
    [{ streaming: false }, () => undefined, 'streaming'],
    [{ stdin: false }, () => ({ stdin: 'pipe' }), 'stdin'],
    [{ stdin: false }, () => ({ input: 'x' }), 'stdin'],
    [{ 'resource-limits': false }, () => ({ limits: { cpuSeconds: 1 } }), 'resource-limits'],
    [{ user: false }, () => ({ user: 'nobody' }), 'user'],
  ])('stream() without %o throws before creating a driver', (capabilities, options, capability) => {
    const { sb, drivers } = fakeSandbox({ capabilities });
    let caught: unknown;
    try {
      sb.stream(['x'], options() as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CapabilityNotSupported);
    expect((caught as CapabilityNotSupported).capability).toBe(capability);
    expect(drivers).toHaveLength(0);
  });

  it('run() rejects without starting anything', async () => {
    const { sb, drivers } = fakeSandbox({ capabilities: { stdin: false } });
    const running = sb.run(['cat'], { input: 'x' });
    expect(running).toBeInstanceOf(Promise);
    await expect(running).rejects.toBeInstanceOf(CapabilityNotSupported);
    expect(drivers).toHaveLength(0);
  });

  it('freezes the manifest [SS-CAP-3]', () => {
    const { sb } = fakeSandbox();
    expect(Object.isFrozen(sb.capabilities)).toBe(true);
    expect(validatorFor('CapabilityManifest')(sb.capabilities)).toBe(true);
  });
});

describe('run() output [SS-CAPOUT-1, SS-ONOUT-1, SS-RESULT-1]', () => {
  it('keeps maxOutputBytes per stream, flags truncation, and delivers everything to onOutput', async () => {
    const { sb, drivers } = fakeSandbox();
    const seen: string[] = [];
    const running = sb.run(['x'], {
      maxOutputBytes: 4,
      onOutput: (chunk) => seen.push(`${chunk.stream}:${decoder.decode(chunk.data)}`),
    });
    await settle();
    const driver = drivers[0]!;
    driver.output('stdout', 'abc');
    driver.output('stdout', 'def');
    driver.output('stderr', 'err!');
    driver.output('stdout', 'gh');
    driver.exit(0);
    const result = await running;
    expect(result.stdoutText).toBe('abcd');
    expect(result.stdoutTruncated).toBe(true);
    expect(result.stderrText).toBe('err!');
    expect(result.stderrTruncated).toBe(false);
    expect(result.streamed).toBe(false);
    expect(seen).toEqual(['stdout:abc', 'stdout:def', 'stderr:err!', 'stdout:gh']);
  });

  it('terminates the command and rejects with CallbackFailed when onOutput throws', async () => {
    const { sb, drivers } = fakeSandbox();
    const boom = new Error('boom');
    let calls = 0;
    const running = sb.run(['x'], {
      onOutput: () => {
        calls++;
        throw boom;
      },
    });
    await settle();
    drivers[0]!.output('stdout', 'first');
    drivers[0]!.output('stdout', 'second');
    const error = await running.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CallbackFailed);
    expect((error as CallbackFailed).cause).toBe(boom);
    expect((error as CallbackFailed).result?.stdoutText).toBe('firstsecond');
    expect(calls).toBe(1);
    expect(drivers[0]!.signals).toEqual(['SIGTERM']);
  });
});

describe('standard input [SS-STDIN-1, SS-STDIN-2]', () => {
  it('delivers writes in call order, then end-of-file; rejects writes after exit', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    const writer = proc.stdin!;
    await Promise.all([writer.write('a'), writer.write(encoder.encode('b')), writer.write('c')]);
    await writer.end();
    // Writes queued together may share one driver call; the bytes and their order are what counts.
    expect(drivers[0]!.written.join('')).toBe('abc');
    expect(drivers[0]!.stdinEnded).toBe(true);
    expect(writer.closed).toBe(true);
    await expect(writer.write('d')).rejects.toBeInstanceOf(StdinClosed);
    drivers[0]!.exit(0);
    await proc.wait();
  });

  it('rejects a write after the command exited', async () => {
    const { sb, drivers } = fakeSandbox();
    await using proc = sb.stream(['cat'], { stdin: 'pipe' });
    await settle();
    drivers[0]!.exit(0);
    await proc.wait();
    expect(proc.stdin!.closed).toBe(true);
    await expect(proc.stdin!.write('late')).rejects.toBeInstanceOf(StdinClosed);
  });

  it('writes one-shot input then closes standard input', async () => {
    const { sb, drivers } = fakeSandbox();
    const running = sb.run(['cat'], { input: 'hello' });
    await settle();
    expect(drivers[0]!.written).toEqual(['hello']);
    expect(drivers[0]!.stdinEnded).toBe(true);
    drivers[0]!.exit(0);
    await running;
  });

  it('gives no writer without stdin: "pipe"', async () => {
    const { sb } = fakeSandbox();
    await using proc = sb.stream(['cat']);
    expect(proc.stdin).toBeNull();
  });
});
