/**
 * The multiplexed stream's splitter, exact at every cut of the stream, and
 * the reading of exec's one exit number. No Engine needed.
 */
import { describe, expect, it } from 'vitest';
import { execStatus, FrameError, FrameSplitter } from '../src/index.js';

function frame(stream: 1 | 2, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('FrameSplitter', () => {
  const out = Buffer.from(Array.from({ length: 300 }, (_, i) => i & 0xff));
  const err = Buffer.from('\x1esandstream:x start 1 1 1 default\n');
  const wire = Buffer.concat([frame(1, out.subarray(0, 100)), frame(2, err), frame(1, Buffer.alloc(0)), frame(1, out.subarray(100))]);

  it('gives back each stream byte for byte whatever two cuts split the stream', () => {
    for (let a = 0; a <= wire.length; a += 7) {
      for (let b = a; b <= wire.length; b += 11) {
        const got = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
        const splitter = new FrameSplitter();
        for (const part of [wire.subarray(0, a), wire.subarray(a, b), wire.subarray(b)]) splitter.push(part, (stream, data) => got[stream].push(Buffer.from(data)));
        expect(Buffer.concat(got.stdout).equals(out), `cuts ${a}, ${b}`).toBe(true);
        expect(Buffer.concat(got.stderr).equals(err), `cuts ${a}, ${b}`).toBe(true);
        expect(splitter.partial).toBe(false);
      }
    }
  });

  it('knows a stream cut inside a header or a payload, and refuses a header no Engine writes', () => {
    const splitter = new FrameSplitter();
    splitter.push(wire.subarray(0, 5), () => undefined);
    expect(splitter.partial).toBe(true);
    const inPayload = new FrameSplitter();
    inPayload.push(wire.subarray(0, 50), () => undefined);
    expect(inPayload.partial).toBe(true);
    expect(() => new FrameSplitter().push(Buffer.from('HTTP/1.1 500 oops\r\n'), () => undefined)).toThrow(FrameError);
  });
});

describe('execStatus', () => {
  it('reads 128+n as death by signal n, and any other number as an exit code', () => {
    expect(execStatus(0)).toEqual({ exitCode: 0, signal: null });
    expect(execStatus(3)).toEqual({ exitCode: 3, signal: null });
    expect(execStatus(128)).toEqual({ exitCode: 128, signal: null });
    expect(execStatus(137)).toEqual({ exitCode: null, signal: 'SIGKILL' });
    expect(execStatus(143)).toEqual({ exitCode: null, signal: 'SIGTERM' });
    expect(execStatus(255)).toEqual({ exitCode: 255, signal: null });
    expect(execStatus(null)).toBeUndefined();
  });
});
