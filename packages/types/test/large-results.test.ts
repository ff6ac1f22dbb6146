import { registerSchema, unregisterSchema, validate as hyperjumpValidate } from '@hyperjump/json-schema/draft-2020-12';
import { Validator as CfworkerValidator } from '@cfworker/json-schema';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgument } from '../src/errors.js';
import { buildSpecDocument } from '../src/spec-document.js';
import { decodeExecResult, decodeOutputChunk, validatorFor } from '../src/validators.js';
import { SCHEMA_ID } from '../src/version.js';

// Issue: the 1.0 base64 pattern overflowed V8's regular-expression stack past
// about 3.2 MiB, so every common validator threw RangeError on a large but
// ordinary result. A result at the default cap (64 MiB per stream) must
// validate in each of them, and a decoder fails only with InvalidArgument.

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const MIB = 1024 * 1024;
const DEFAULT_CAP = 64 * MIB;
const document = buildSpecDocument();
const EXEC_RESULT = `${SCHEMA_ID}#/$defs/ExecResult`;

function result(stdoutBytes: number, stderrBytes = 0): Record<string, unknown> {
  return {
    exitCode: 0,
    signal: null,
    // Every byte value, so the encoding's whole alphabet occurs.
    stdout: Buffer.from(Uint8Array.from({ length: stdoutBytes }, (_, i) => i % 251)).toString('base64'),
    stderr: Buffer.alloc(stderrBytes, 0xff).toString('base64'),
    streamed: false,
    timedOut: false,
    stdoutTruncated: true,
    stderrTruncated: false,
    durationMs: 1234.5,
  };
}

// Three lengths modulo 3, so each form of the final quantum occurs.
const LARGE = [DEFAULT_CAP, DEFAULT_CAP + 1, DEFAULT_CAP + 2].map((bytes) => [bytes, result(bytes)] as const);
const broken = (value: Record<string, unknown>, field: string, text: string) => ({ ...value, [field]: text });

function inThreeValidators(): Array<[name: string, check: (value: unknown) => Promise<boolean>]> {
  const ajv = new Ajv2020({ strict: true });
  addFormats(ajv);
  ajv.addSchema(document);
  const ajvValidate = ajv.getSchema(EXEC_RESULT)!;
  const cfworker = new CfworkerValidator({ $ref: EXEC_RESULT }, '2020-12', false);
  cfworker.addSchema(document as never);
  return [
    ['ajv', async (value) => ajvValidate(value) as boolean],
    ['@hyperjump/json-schema', async (value) => (await hyperjumpValidate(EXEC_RESULT, value as never)).valid],
    ['@cfworker/json-schema', async (value) => cfworker.validate(value).valid],
  ];
}

// Each test here is CPU-bound work over 64 to 128 MiB: a few seconds on a quiet machine, several times
// that beside another test run on two cores. The bound only catches a hang, so it is wide.
const LARGE_WORK_MS = 180_000;

describe('a 64 MiB ExecResult', { timeout: LARGE_WORK_MS }, () => {
  beforeAll(() => registerSchema(document as never));
  afterAll(() => unregisterSchema(SCHEMA_ID));

  describe.each(inThreeValidators())('in %s', (_, check) => {
    it.each(LARGE)('validates with %i bytes of stdout', async (_bytes, value) => {
      await expect(check(value)).resolves.toBe(true);
    });

    it('is rejected, not thrown at, when its base64 is broken at the end', async () => {
      const [, value] = LARGE[0]!;
      const text = value['stdout'] as string;
      await expect(check(broken(value, 'stdout', `${text.slice(0, -4)}!!!!`))).resolves.toBe(false);
      await expect(check(broken(value, 'stdout', text.slice(0, -1)))).resolves.toBe(false);
    });
  });

  it('round-trips through decodeExecResult with stderr at the cap too', () => {
    const value = result(DEFAULT_CAP, DEFAULT_CAP);
    expect(validatorFor('ExecResult')(value)).toBe(true);
    const decoded = decodeExecResult(value);
    expect(decoded.stdout.byteLength).toBe(DEFAULT_CAP);
    expect(decoded.stderr.byteLength).toBe(DEFAULT_CAP);
    expect(decoded.stdout[DEFAULT_CAP - 1]).toBe((DEFAULT_CAP - 1) % 251);
  });

  it('is decoded from a chunk of the same size', () => {
    const data = Buffer.alloc(DEFAULT_CAP, 0x5a).toString('base64');
    expect(decodeOutputChunk({ stream: 'stderr', data }).data.byteLength).toBe(DEFAULT_CAP);
  });
});

describe('every decode failure is InvalidArgument', () => {
  const [, large] = LARGE[0]!;
  const text = large['stdout'] as string;
  const cases: Array<[string, () => unknown]> = [
    ['large stdout with a bad character at the end', () => decodeExecResult(broken(large, 'stdout', `${text.slice(0, -4)}!!!!`))],
    ['large stdout one character short', () => decodeExecResult(broken(large, 'stdout', text.slice(0, -1)))],
    ['large stdout with non-zero pad bits', () => decodeExecResult(broken(large, 'stdout', `${text.slice(0, -2)}B=`))],
    ['large chunk data with a space at the start', () => decodeOutputChunk({ stream: 'stdout', data: ` ${text.slice(1)}` })],
    ['a number', () => decodeExecResult(42)],
    ['an array', () => decodeOutputChunk([])],
    ['a cyclic object', () => {
      const cyclic: Record<string, unknown> = { stream: 'stdout' };
      cyclic['data'] = cyclic;
      return decodeOutputChunk(cyclic);
    }],
  ];

  it.each(cases)('%s', (_, decode) => {
    let thrown: unknown;
    try {
      decode();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidArgument);
    expect(thrown).not.toBeInstanceOf(RangeError);
  });

  it('a validator that throws reports a failure instead', () => {
    const validate = validatorFor('OutputChunk');
    const hostile = new Proxy({}, { ownKeys: () => { throw new RangeError('boom'); }, has: () => { throw new RangeError('boom'); }, get: () => { throw new RangeError('boom'); } });
    expect(validate(hostile)).toBe(false);
    expect(validate.issues[0]?.keyword).toBe('validator');
    expect(() => decodeOutputChunk(hostile)).toThrow(InvalidArgument);
  });
});
