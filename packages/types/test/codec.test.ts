import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidArgument } from '../src/errors.js';
import { createExecResult } from '../src/result.js';
import type { ExecResult } from '../src/schema/exec-result.js';
import {
  decodeExecResult,
  decodeOutputChunk,
  encodeExecResult,
  encodeOutputChunk,
  validatorFor,
} from '../src/validators.js';

const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, index) => index);
const DATA_FIELDS = [
  'exitCode',
  'signal',
  'stdout',
  'stderr',
  'streamed',
  'timedOut',
  'stdoutTruncated',
  'stderrTruncated',
  'durationMs',
];

/** Asserts `fn` throws InvalidArgument and returns it. */
function invalidArgument(fn: () => unknown): InvalidArgument {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgument);
    return error as InvalidArgument;
  }
  throw new Error('expected InvalidArgument, nothing was thrown');
}

/** Sends a value through real JSON text, as a wire would. */
function overTheWire(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('OutputChunk wire form', () => {
  it('round-trips all 256 byte values in one chunk', () => {
    const json = encodeOutputChunk({ stream: 'stderr', data: ALL_BYTES });
    expect(json).toEqual({ stream: 'stderr', data: Buffer.from(ALL_BYTES).toString('base64') });
    expect(validatorFor('OutputChunk')(json)).toBe(true);
    const back = decodeOutputChunk(overTheWire(json));
    expect(back.stream).toBe('stderr');
    expect(back.data).toBeInstanceOf(Uint8Array);
    expect([...back.data]).toEqual([...ALL_BYTES]);
  });

  it('round-trips every single byte value and every padding length', () => {
    const validate = validatorFor('OutputChunk');
    for (let value = 0; value < 256; value++) {
      for (let length = 1; length <= 3; length++) {
        const data = new Uint8Array(length).fill(value);
        const json = encodeOutputChunk({ stream: 'stdout', data });
        expect(validate(json), `byte ${value} x${length}: ${json.data}`).toBe(true);
        expect([...decodeOutputChunk(json).data]).toEqual([...data]);
      }
    }
  });

  it('encodes a view into a larger buffer by its own bytes only', () => {
    const backing = Uint8Array.from([1, 2, 3, 4, 5, 6]);
    const json = encodeOutputChunk({ stream: 'stdout', data: backing.subarray(2, 4) });
    expect(json.data).toBe(Buffer.from([3, 4]).toString('base64'));
  });

  it('rejects bad wire input with InvalidArgument naming the failing path', () => {
    expect(invalidArgument(() => decodeOutputChunk({ stream: 'stdout', data: 'not base64!' })).key).toBe('chunk/data');
    expect(invalidArgument(() => decodeOutputChunk({ stream: 'stdout', data: 'aGl=' })).key).toBe('chunk/data');
    expect(invalidArgument(() => decodeOutputChunk({ stream: 'stdin', data: 'aGk=' })).key).toBe('chunk/stream');
    expect(invalidArgument(() => decodeOutputChunk({ stream: 'stdout', data: [104, 105] })).key).toBe('chunk/data');
    const missing = invalidArgument(() => decodeOutputChunk({ stream: 'stdout' }));
    expect(missing.key).toBe('chunk');
    expect(missing.reason).toMatch(/data/);
    expect(invalidArgument(() => decodeOutputChunk(null)).key).toBe('chunk');
  });

  it('names the schema keyword in the reason', () => {
    const error = invalidArgument(() => decodeOutputChunk({ stream: 'stdout', data: 'aGk' }));
    expect(error.reason).toMatch(/\(pattern\)/);
    expect(error.message).toMatch(/^chunk\/data: /);
  });
});

describe('ExecResult wire form', () => {
  const result = createExecResult({
    exitCode: 3,
    stdout: ALL_BYTES,
    stderr: ALL_BYTES.slice().reverse(),
    stdoutTruncated: true,
    durationMs: 12.75,
  });

  it('round-trips all 256 byte values on both streams', () => {
    const json = encodeExecResult(result);
    expect(json.stdout).toBe(Buffer.from(ALL_BYTES).toString('base64'));
    expect(validatorFor('ExecResult')(json)).toBe(true);
    const back = decodeExecResult(overTheWire(json));
    expect([...back.stdout]).toEqual([...ALL_BYTES]);
    expect([...back.stderr]).toEqual([...ALL_BYTES].reverse());
    expect(back).toMatchObject({
      exitCode: 3,
      signal: null,
      streamed: false,
      timedOut: false,
      stdoutTruncated: true,
      stderrTruncated: false,
      durationMs: 12.75,
    });
  });

  it('encodes only the data fields of the schema', () => {
    const json = encodeExecResult(result) as unknown as Record<string, unknown>;
    expect(Object.keys(json).sort()).toEqual([...DATA_FIELDS].sort());
    expect(typeof json['stdout']).toBe('string');
  });

  it('decodes with the text views in place', () => {
    const back = decodeExecResult(
      encodeExecResult(createExecResult({ exitCode: 0, stdout: new TextEncoder().encode('héllo\n') })),
    );
    expect(back.stdoutText).toBe('héllo\n');
    expect(back.stderrText).toBe('');
  });

  it('rejects bad wire input with InvalidArgument naming the failing path', () => {
    const json = overTheWire(encodeExecResult(result)) as Record<string, unknown>;
    expect(invalidArgument(() => decodeExecResult({ ...json, exitCode: 256 })).key).toBe('result/exitCode');
    expect(invalidArgument(() => decodeExecResult({ ...json, stderr: 'a b' })).key).toBe('result/stderr');
    expect(invalidArgument(() => decodeExecResult({ ...json, streamed: true })).key).toBe('result/stdout');
    expect(invalidArgument(() => decodeExecResult({ ...json, signal: 'SIGKILL' })).key).toBe('result/exitCode');
    expect(invalidArgument(() => decodeExecResult({ ...json, stdoutText: 'x' })).key).toBe('result');
    expect(invalidArgument(() => decodeExecResult('{}')).key).toBe('result');
  });
});

describe('ExecResult text views', () => {
  it('are non-enumerable getters', () => {
    const result = createExecResult({ stdout: new TextEncoder().encode('out'), stderr: new TextEncoder().encode('err') });
    for (const name of ['stdoutText', 'stderrText'] as const) {
      const descriptor = Object.getOwnPropertyDescriptor(result, name);
      expect(descriptor, name).toBeDefined();
      expect(descriptor!.enumerable, name).toBe(false);
      expect(descriptor!.get, name).toBeTypeOf('function');
      expect('value' in descriptor!, name).toBe(false);
    }
    expect(Object.keys(result)).toEqual(DATA_FIELDS);
    expect(result.stdoutText).toBe('out');
    expect(result.stderrText).toBe('err');
  });

  it('decode nothing until first read, and then only once', () => {
    const decode = vi.spyOn(TextDecoder.prototype, 'decode');
    const result = createExecResult({ stdout: new TextEncoder().encode('lazy') });
    expect(decode).not.toHaveBeenCalled();
    expect(result.stdoutText).toBe('lazy');
    expect(decode).toHaveBeenCalledTimes(1);
    expect(result.stdoutText).toBe('lazy');
    expect(decode).toHaveBeenCalledTimes(1);
    expect(result.stderrText).toBe('');
    expect(decode).toHaveBeenCalledTimes(2);
  });

  it('replace invalid UTF-8 with U+FFFD while the bytes stay exact', () => {
    const bytes = Uint8Array.from([0x68, 0xc3, 0x28, 0xff, 0x0a]);
    const result = createExecResult({ stdout: bytes, stderr: Uint8Array.from([0xe2, 0x82]) });
    expect(result.stdoutText).toBe('h\uFFFD(\uFFFD\n');
    expect(result.stderrText).toBe('\uFFFD');
    expect([...result.stdout]).toEqual([...bytes]);
  });

  it('do not leak into JSON or a spread copy', () => {
    const result: ExecResult = createExecResult({ exitCode: 0, stdout: new TextEncoder().encode('hi') });
    void result.stdoutText; // a cached view must stay hidden too
    const parsed = JSON.parse(JSON.stringify(result)) as Record<string, unknown>;
    expect(parsed).not.toHaveProperty('stdoutText');
    expect(parsed).not.toHaveProperty('stderrText');
    expect(Object.keys(parsed)).toEqual(DATA_FIELDS);
    expect({ ...result }).not.toHaveProperty('stdoutText');
  });

  it('belong to a frozen result', () => {
    const result = createExecResult({ exitCode: 0 });
    expect(Object.isFrozen(result)).toBe(true);
    expect(result).toMatchObject({ exitCode: 0, signal: null, streamed: false, timedOut: false, durationMs: 0 });
    expect(result.stdout.byteLength).toBe(0);
  });
});
