import { describe, expect, it } from 'vitest';
import {
  AbortError,
  CallbackFailed,
  CapabilityNotSupported,
  InvalidArgument,
  InvalidState,
  SandboxClosed,
  CommandNotFound,
  SandstreamError,
  SpawnFailed,
  StdinClosed,
  TransportError,
} from '../src/errors.js';
import { createExecResult } from '../src/result.js';
import { ErrorCode } from '../src/schema/error-code.js';
import { validatorFor } from '../src/validators.js';

const partial = createExecResult({ signal: 'SIGTERM', stdout: new TextEncoder().encode('partial'), durationMs: 5 });
const cause = new Error('root cause');

/** One instance of every error class, with the code and name it must carry. */
const CASES: ReadonlyArray<[SandstreamError, string, string]> = [
  [new CapabilityNotSupported('stdin', 'stream()'), 'CAPABILITY_NOT_SUPPORTED', 'CapabilityNotSupported'],
  [new InvalidArgument('options.timeout', 'must be positive'), 'INVALID_ARGUMENT', 'InvalidArgument'],
  [new InvalidState('a Process can be iterated only once'), 'INVALID_STATE', 'InvalidState'],
  [new AbortError(partial, { cause }), 'ABORTED', 'AbortError'],
  [new SpawnFailed(['nope', '-x'], 'ENOENT', { cause }), 'SPAWN_FAILED', 'SpawnFailed'],
  [new StdinClosed('standard input is closed'), 'STDIN_CLOSED', 'StdinClosed'],
  [new CallbackFailed(partial, { cause }), 'CALLBACK_FAILED', 'CallbackFailed'],
  [new TransportError('connection reset', { cause }), 'TRANSPORT', 'TransportError'],
  [new SandboxClosed(), 'SANDBOX_CLOSED', 'SandboxClosed'],
  [new CommandNotFound('cmd-1'), 'COMMAND_NOT_FOUND', 'CommandNotFound'],
];

describe.each(CASES)('%s', (error, code, name) => {
  it(`has code ${code} and name ${name}`, () => {
    expect(error.code).toBe(code);
    expect(error.name).toBe(name);
    expect(String(error).startsWith(`${name}: `)).toBe(true);
  });

  it('is a SandstreamError and an Error, with a message and a stack', () => {
    expect(error).toBeInstanceOf(SandstreamError);
    expect(error).toBeInstanceOf(Error);
    expect(error.message.length).toBeGreaterThan(0);
    expect(error.stack).toContain(name);
  });

  it('carries a code of the spec', () => {
    expect(validatorFor('ErrorCode')(error.code)).toBe(true);
  });
});

describe('error codes', () => {
  it('map one to one onto the ErrorCode definition of the spec', () => {
    const specCodes = ErrorCode.anyOf.map((member) => member.const).sort();
    const classCodes = CASES.map(([error]) => error.code).sort();
    expect(classCodes).toEqual(specCodes);
    expect(new Set(classCodes).size).toBe(classCodes.length);
  });
});

describe('the data each error carries', () => {
  it('CapabilityNotSupported names the capability and the operation', () => {
    const error = new CapabilityNotSupported('resource-limits', 'run()');
    expect(error.capability).toBe('resource-limits');
    expect(error.operation).toBe('run()');
    expect(error.message).toContain('"resource-limits"');
    expect(error.message).toContain('run()');
  });

  it('InvalidArgument names the key and the reason', () => {
    const error = new InvalidArgument('argv[1]', 'must be a string, got number 1');
    expect(error.key).toBe('argv[1]');
    expect(error.reason).toBe('must be a string, got number 1');
    expect(error.message).toBe('argv[1]: must be a string, got number 1');
  });

  it('AbortError carries the partial result and the signal reason as cause', () => {
    const error = new AbortError(partial, { cause });
    expect(error.result).toBe(partial);
    expect(error.result?.stdoutText).toBe('partial');
    expect(error.cause).toBe(cause);
  });

  it('AbortError may carry no result when nothing ran', () => {
    expect(new AbortError(undefined).result).toBeUndefined();
  });

  it('CallbackFailed carries the partial result and what the callback threw', () => {
    const error = new CallbackFailed(partial, { cause });
    expect(error.result).toBe(partial);
    expect(error.cause).toBe(cause);
  });

  it('SpawnFailed carries the argv and names the program', () => {
    const error = new SpawnFailed(['/no/such/tool', '--flag'], 'ENOENT', { cause });
    expect(error.argv).toEqual(['/no/such/tool', '--flag']);
    expect(error.message).toContain('"/no/such/tool"');
    expect(error.message).toContain('ENOENT');
    expect(error.cause).toBe(cause);
  });

  it('TransportError, StdinClosed and InvalidState keep message and cause', () => {
    for (const Ctor of [TransportError, StdinClosed, InvalidState]) {
      const error = new Ctor('detail', { cause });
      expect(error.message).toBe('detail');
      expect(error.cause).toBe(cause);
    }
  });

  it('TransportError carries the commandId of a background command it is about (1.2), undefined otherwise', () => {
    expect(new TransportError('lost', { commandId: 'cmd-1' }).commandId).toBe('cmd-1');
    expect(new TransportError('lost').commandId).toBeUndefined();
    const error = new CommandNotFound('cmd-1');
    expect([error.commandId, error.message]).toEqual(['cmd-1', 'no background command "cmd-1" in this sandbox']);
  });

  it('SandboxClosed needs no arguments', () => {
    expect(new SandboxClosed().message).toBe('the sandbox is closed');
  });
});
